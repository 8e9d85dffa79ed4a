//! Places where trials run: loopback, two namespaces joined by a veth pair,
//! or two namespaces joined through a middle namespace that imposes the
//! link (a kernel bridge with qdiscs, or tcplab's emulator).
//!
//! Addresses live only inside the namespaces tcplab creates: the sender
//! side ("a") is 10.77.0.1 / fd77::1, the receiver side ("b") 10.77.0.2 /
//! fd77::2. Interfaces are created directly inside their namespaces, so
//! nothing appears in the host's own namespace.

use crate::cmd;
use crate::emulator::{DirectionStats, Emulator};
use crate::error::LabError;
use crate::link::{profile, LinkSpec, Mechanism};
use crate::names::Tag;
use crate::netns::{NetNs, NsGuard};
use crate::offload;
use crate::shaper;
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The shape of a place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Topology {
    /// Both endpoints on the host's loopback.
    Loopback,
    /// Each endpoint in its own namespace, joined by a veth pair.
    Veth,
    /// Each endpoint in its own namespace, joined through a middle namespace.
    Router,
}

/// What the user asked for: a topology and, optionally, a link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlaceSpec {
    /// The topology.
    pub topology: Topology,
    /// The link's properties, if any.
    pub link: Option<LinkSpec>,
    /// The name as given (`loopback`, `veth`, `router`, `ether10`, …).
    pub label: String,
}

impl PlaceSpec {
    /// From `--topology NAME` and `--link SPEC`. A profile name as topology
    /// means the router topology with that profile's link; a `--link` alone
    /// means the router topology.
    pub fn parse(topology: Option<&str>, link: Option<&str>) -> Result<PlaceSpec, LabError> {
        let link_spec = link.map(LinkSpec::parse).transpose()?;
        let name = topology.unwrap_or(if link.is_some() { "router" } else { "loopback" });
        let (topology, profile_link) = match name {
            "loopback" => (Topology::Loopback, None),
            "veth" => (Topology::Veth, None),
            "router" => (Topology::Router, None),
            other => match profile(other) {
                Some(p) => (Topology::Router, Some(p)),
                None => {
                    return Err(LabError::Spec(format!(
                        "unknown topology {other:?}; use loopback, veth, router, ether10, lan100, lan1g, man or wan"
                    )))
                }
            },
        };
        if topology == Topology::Loopback && link_spec.is_some() {
            return Err(LabError::Spec(
                "--link needs the veth or router topology, not loopback".into(),
            ));
        }
        let label = match link {
            Some(l) => format!("{name} {l}"),
            None => name.to_string(),
        };
        Ok(PlaceSpec {
            topology,
            link: link_spec.or(profile_link),
            label,
        })
    }
}

impl PlaceSpec {
    /// The mechanism this spec will use here, or why it cannot be built.
    pub fn check(&self) -> Result<Mechanism, LabError> {
        self.check_with(shaper::netem_available())
    }

    /// The mechanism this spec would use on a kernel with or without the
    /// netem qdisc, or why it could not be built there (so both cases can
    /// be tested on either kind of kernel).
    pub fn check_with(&self, netem_available: bool) -> Result<Mechanism, LabError> {
        if self.topology == Topology::Loopback {
            return Ok(Mechanism::None);
        }
        let mech = self
            .link
            .clone()
            .unwrap_or_default()
            .resolve(netem_available)?;
        if self.topology == Topology::Veth && mech == Mechanism::Emulator {
            return Err(LabError::Spec(
                "the veth topology can shape rate only (no netem here); delay, jitter, loss and reordering need --topology router"
                    .into(),
            ));
        }
        Ok(mech)
    }
}

/// Network facts of a built place, for the record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlaceInfo {
    /// The spec's label.
    pub label: String,
    /// The topology.
    pub topology: Topology,
    /// The link asked for.
    pub link: Option<LinkSpec>,
    /// What imposes it: tbf, htb, netem, emulator or none.
    pub mechanism: String,
    /// Namespaces created.
    pub namespaces: Vec<String>,
    /// The literal commands that built it, in order (an offload set by
    /// ioctl as the `ethtool -K` that does it), for a reader to rerun.
    #[serde(default)]
    pub commands: Vec<String>,
    /// `tc qdisc show` of every namespace once built, per device (veth's
    /// default is noqueue: no queue can grow there).
    #[serde(default)]
    pub qdiscs: Vec<String>,
}

/// A built place; tears everything down when dropped (emulator first, then
/// namespaces, which takes their interfaces and qdiscs with them).
pub struct Place {
    info: PlaceInfo,
    emulator: Option<Emulator>,
    client_ns: Option<NetNs>,
    server_ns: Option<NetNs>,
    middle_ns: Option<NetNs>,
    tag: Option<Tag>,
}

const A4: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
const B4: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);
const A6: Ipv6Addr = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 1);
const B6: Ipv6Addr = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 2);

/// Creates a veth pair: `name` in namespace `ns`, its peer `peer` directly
/// in namespace `peer_ns` (nothing passes through the host's namespace).
fn veth_pair(ns: &str, name: &str, peer: &str, peer_ns: &str) -> Result<(), LabError> {
    cmd::ip(
        Some(ns),
        &[
            "link", "add", name, "type", "veth", "peer", "name", peer, "netns", peer_ns,
        ],
    )?;
    Ok(())
}

fn addresses(ns: &str, dev: &str, v4: Ipv4Addr, v6: Ipv6Addr, mtu: u32) -> Result<(), LabError> {
    cmd::ip(Some(ns), &["link", "set", dev, "mtu", &mtu.to_string()])?;
    cmd::ip(Some(ns), &["addr", "add", &format!("{v4}/24"), "dev", dev])?;
    cmd::ip(
        Some(ns),
        &["addr", "add", &format!("{v6}/64"), "dev", dev, "nodad"],
    )?;
    cmd::ip(Some(ns), &["link", "set", dev, "up"])?;
    Ok(())
}

impl Place {
    /// Builds the place. Loopback builds nothing.
    pub fn build(spec: &PlaceSpec) -> Result<Place, LabError> {
        let mut place = Place {
            info: PlaceInfo {
                label: spec.label.clone(),
                topology: spec.topology,
                link: spec.link.clone(),
                mechanism: Mechanism::None.name().into(),
                namespaces: Vec::new(),
                commands: Vec::new(),
                qdiscs: Vec::new(),
            },
            emulator: None,
            client_ns: None,
            server_ns: None,
            middle_ns: None,
            tag: None,
        };
        if spec.topology == Topology::Loopback {
            return Ok(place);
        }
        let link = spec.link.clone().unwrap_or_default();
        let mech = spec.check()?;
        place.info.mechanism = mech.name().into();
        let tag = Tag::fresh();
        tag.claim()
            .map_err(|e| LabError::io("writing the owner file under /run/tcplab", e))?;
        place.tag = Some(tag.clone());
        // On any error below, dropping `place` removes what was built so far.
        let a = NetNs::create(&tag.name("a"))?;
        place.info.namespaces.push(a.name().into());
        place.client_ns = Some(a);
        let b = NetNs::create(&tag.name("b"))?;
        place.info.namespaces.push(b.name().into());
        place.server_ns = Some(b);
        let (an, bn) = (tag.name("a"), tag.name("b"));
        match spec.topology {
            Topology::Veth => {
                veth_pair(&an, &an, &bn, &bn)?;
                addresses(&an, &an, A4, A6, link.mtu)?;
                addresses(&bn, &bn, B4, B6, link.mtu)?;
                shaper::apply(&an, &an, &link, mech)?;
                shaper::apply(&bn, &bn, &link, mech)?;
                place.frames_for_framing(&link)?;
            }
            Topology::Router => place.build_middle(&tag, &link, mech)?,
            Topology::Loopback => unreachable!("handled above"),
        }
        // Every name the place created carries its tag.
        place.info.commands = cmd::logged_mentioning(tag.as_str());
        place.info.qdiscs = place.qdiscs();
        Ok(place)
    }

    /// Each device's root qdisc in each of the place's namespaces, as `tc
    /// qdisc show` prints it, the namespace first ("tcplab-…-a: qdisc
    /// noqueue 0: dev tcplab-…-a root refcnt 2"); loopback devices left
    /// out. A namespace `tc` cannot read says so.
    fn qdiscs(&self) -> Vec<String> {
        let mut out = Vec::new();
        for ns in &self.info.namespaces {
            match cmd::run("tc", &["-n", ns, "qdisc", "show"]) {
                Ok(text) => out.extend(
                    text.lines()
                        .filter(|l| l.starts_with("qdisc") && !l.contains(" dev lo "))
                        .map(|l| format!("{ns}: {}", l.trim())),
                ),
                Err(e) => out.push(format!("{ns}: not read ({e})")),
            }
        }
        out
    }

    fn build_middle(
        &mut self,
        tag: &Tag,
        link: &LinkSpec,
        mech: Mechanism,
    ) -> Result<(), LabError> {
        let (an, bn, rn) = (tag.name("a"), tag.name("b"), tag.name("r"));
        let (xn, yn) = (tag.name("x"), tag.name("y"));
        let r = NetNs::create(&rn)?;
        self.info.namespaces.push(rn.clone());
        self.middle_ns = Some(r);
        veth_pair(&an, &an, &xn, &rn)?;
        veth_pair(&bn, &bn, &yn, &rn)?;
        addresses(&an, &an, A4, A6, link.mtu)?;
        addresses(&bn, &bn, B4, B6, link.mtu)?;
        for dev in [&xn, &yn] {
            cmd::ip(
                Some(&rn),
                &["link", "set", dev, "mtu", &link.mtu.to_string(), "up"],
            )?;
        }
        if mech == Mechanism::Emulator {
            // Frames must cross the bridge whole: no super-frames, no
            // unfinished checksums.
            let ns_of = |n: &str| -> &NetNs {
                [&self.client_ns, &self.server_ns, &self.middle_ns]
                    .into_iter()
                    .flatten()
                    .find(|x| x.name() == n)
                    .expect("namespace exists")
            };
            for (ns, dev) in [(&an, &an), (&bn, &bn), (&rn, &xn), (&rn, &yn)] {
                let dev = dev.clone();
                ns_of(ns).run_in(move || offload::plain_frames(&dev))??;
            }
            let spec = link.clone();
            let seed = u64::from_str_radix(tag.as_str(), 16).unwrap_or(1);
            let (x, y) = (xn.clone(), yn.clone());
            cmd::note(format!(
                "# no command: tcplab's own link emulator bridges {xn} and {yn} in {rn} \
                 (AF_PACKET; one thread per direction, each dropping frames with the loss \
                 probability or when its {}-frame queue is full, serializing them at the \
                 rate with {} B of framing each, holding them for the delay ± jitter; \
                 its random draws from seed {seed})",
                link.queue_frames, link.framing_bytes
            ));
            let emu = ns_of(&rn).run_in(move || Emulator::start(&x, &y, &spec, seed))??;
            self.emulator = Some(emu);
        } else {
            let br = rn.clone();
            cmd::ip(Some(&rn), &["link", "add", &br, "type", "bridge"])?;
            for dev in [&xn, &yn] {
                cmd::ip(Some(&rn), &["link", "set", dev, "master", &br])?;
            }
            cmd::ip(Some(&rn), &["link", "set", &br, "up"])?;
            // Egress of x carries b→a, egress of y carries a→b.
            shaper::apply(&rn, &xn, link, mech)?;
            shaper::apply(&rn, &yn, link, mech)?;
            self.frames_for_framing(link)?;
        }
        Ok(())
    }

    /// On a rate-limited link with framing, the endpoints send one frame per
    /// packet (TSO and GSO off), so that the qdisc charges every frame its
    /// preamble, FCS and gap; a GSO packet would be charged them once.
    fn frames_for_framing(&self, link: &LinkSpec) -> Result<(), LabError> {
        if link.rate_bps.is_none() || link.framing_bytes == 0 {
            return Ok(());
        }
        for ns in [&self.client_ns, &self.server_ns].into_iter().flatten() {
            let dev = ns.name().to_string();
            ns.run_in(move || offload::one_frame_per_packet(&dev))??;
        }
        Ok(())
    }

    /// What was built.
    pub fn info(&self) -> &PlaceInfo {
        &self.info
    }

    /// The address the server listens on.
    pub fn server_ip(&self, v6: bool) -> IpAddr {
        match (self.info.topology, v6) {
            (Topology::Loopback, false) => Ipv4Addr::LOCALHOST.into(),
            (Topology::Loopback, true) => Ipv6Addr::LOCALHOST.into(),
            (_, false) => B4.into(),
            (_, true) => B6.into(),
        }
    }

    /// The client's (or server's) end: its namespace and veth device, which
    /// share a name (None on loopback).
    pub fn endpoint(&self, client: bool) -> Option<crate::trial_changes::Endpoint> {
        let ns = if client {
            &self.client_ns
        } else {
            &self.server_ns
        };
        ns.as_ref().map(|n| crate::trial_changes::Endpoint {
            ns: n.name().to_string(),
            dev: n.name().to_string(),
        })
    }

    /// Moves the calling thread into the client's namespace (None on loopback).
    pub fn enter_client(&self) -> Result<Option<NsGuard>, LabError> {
        self.client_ns.as_ref().map(NetNs::enter).transpose()
    }

    /// Runs `f` on a thread inside the server's namespace (or here, on loopback).
    pub fn in_server<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, LabError> {
        match &self.server_ns {
            Some(ns) => ns.run_in(f),
            None => Ok(f()),
        }
    }

    /// Runs `f` on a thread inside the client's namespace (or here, on loopback).
    pub fn in_client<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, LabError> {
        match &self.client_ns {
            Some(ns) => ns.run_in(f),
            None => Ok(f()),
        }
    }

    /// The emulator's counters so far (x→y is client to server), if it runs.
    pub fn emulator_stats(&self) -> Option<Vec<DirectionStats>> {
        self.emulator.as_ref().map(Emulator::stats)
    }

    /// Stops the emulator (if any) and returns its counters.
    pub fn stop_emulator(&mut self) -> Option<Result<Vec<DirectionStats>, LabError>> {
        self.emulator.take().map(Emulator::stop)
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.emulator.take();
        self.client_ns.take();
        self.server_ns.take();
        self.middle_ns.take();
        if let Some(t) = &self.tag {
            t.release();
        }
    }
}
