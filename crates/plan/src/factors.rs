//! The factors of a sweep, each a list of levels, and their cartesian product.

use crate::parse::PlanError;
use record::{Api, HostSpeed, Layer, LoadSpec, Pin, TestKind, TrialParams};

/// Levels of every factor. An empty list means "the test's default".
#[derive(Debug, Clone, Default)]
pub struct Factors {
    /// `--bytes` levels.
    pub bytes: Vec<u64>,
    /// `--duration` levels, in seconds.
    pub duration_s: Vec<f64>,
    /// `--write-size` levels.
    pub write_size: Vec<u64>,
    /// `--read-size` levels.
    pub read_size: Vec<u64>,
    /// `--sndbuf` levels.
    pub sndbuf: Vec<u64>,
    /// `--rcvbuf` levels.
    pub rcvbuf: Vec<u64>,
    /// `--rcvlowat` levels (None = auto).
    pub rcvlowat: Vec<Option<u64>>,
    /// `--nodelay` levels.
    pub nodelay: Vec<bool>,
    /// `--cork` levels.
    pub cork: Vec<bool>,
    /// `--quickack` levels.
    pub quickack: Vec<bool>,
    /// `--mss` levels.
    pub mss: Vec<u32>,
    /// `--cc` levels.
    pub cc: Vec<String>,
    /// `--parallel` levels.
    pub parallel: Vec<u32>,
    /// `--reverse` levels.
    pub reverse: Vec<bool>,
    /// `--ipv6` levels.
    pub ipv6: Vec<bool>,
    /// `--api` levels.
    pub api: Vec<Api>,
    /// `--send-rate` levels, bits per second.
    pub send_rate_bps: Vec<u64>,
    /// `--recv-work` levels, ns per KB.
    pub recv_work_ns_per_kb: Vec<u64>,
    /// `--load` levels (None = no load).
    pub load: Vec<Option<LoadSpec>>,
    /// `--topology` levels.
    pub topology: Vec<String>,
    /// `--link` (one level: a spec contains commas).
    pub link: Vec<String>,
    /// `--host-speed` levels (None = full speed).
    pub host_speed: Vec<Option<HostSpeed>>,
    /// `--pin` (one level).
    pub pin: Vec<Pin>,
    /// `--routes` levels.
    pub routes: Vec<u32>,
    /// `--checksum-offload` levels.
    pub checksum_offload: Vec<bool>,
    /// `--layer` levels.
    pub layer: Vec<Layer>,
}

/// Replaces every point by one copy per level, with `set` applying the level.
fn cross<T: Clone>(
    points: Vec<TrialParams>,
    levels: &[T],
    set: impl Fn(&mut TrialParams, T),
) -> Vec<TrialParams> {
    if levels.is_empty() {
        return points;
    }
    let mut out = Vec::with_capacity(points.len() * levels.len());
    for p in points {
        for l in levels {
            let mut q = p.clone();
            set(&mut q, l.clone());
            out.push(q);
        }
    }
    out
}

impl Factors {
    /// The cartesian product of all levels for `test`, in a fixed order (the
    /// order of the fields above, first factor slowest).
    pub fn expand(&self, test: TestKind) -> Result<Vec<TrialParams>, PlanError> {
        if !self.bytes.is_empty() && !self.duration_s.is_empty() {
            return Err(PlanError::Combination(
                "--bytes and --duration are mutually exclusive".into(),
            ));
        }
        let mut pts = vec![TrialParams::defaults(test)];
        pts = cross(pts, &self.bytes, |p, v| {
            p.bytes = Some(v);
            p.duration_s = None;
        });
        pts = cross(pts, &self.duration_s, |p, v| p.duration_s = Some(v));
        pts = cross(pts, &self.write_size, |p, v| p.write_size = v);
        pts = cross(pts, &self.read_size, |p, v| p.read_size = v);
        pts = cross(pts, &self.sndbuf, |p, v| p.sndbuf = Some(v));
        pts = cross(pts, &self.rcvbuf, |p, v| p.rcvbuf = Some(v));
        pts = cross(pts, &self.rcvlowat, |p, v| p.rcvlowat = v);
        pts = cross(pts, &self.nodelay, |p, v| p.nodelay = v);
        pts = cross(pts, &self.cork, |p, v| p.cork = v);
        pts = cross(pts, &self.quickack, |p, v| p.quickack = v);
        pts = cross(pts, &self.mss, |p, v| p.mss = Some(v));
        pts = cross(pts, &self.cc, |p, v| p.cc = Some(v));
        pts = cross(pts, &self.parallel, |p, v| p.parallel = v);
        pts = cross(pts, &self.reverse, |p, v| p.reverse = v);
        pts = cross(pts, &self.ipv6, |p, v| p.ipv6 = v);
        pts = cross(pts, &self.api, |p, v| p.api = v);
        pts = cross(pts, &self.send_rate_bps, |p, v| p.send_rate_bps = Some(v));
        pts = cross(pts, &self.recv_work_ns_per_kb, |p, v| {
            p.recv_work_ns_per_kb = Some(v)
        });
        pts = cross(pts, &self.load, |p, v| p.load = v);
        pts = cross(pts, &self.topology, |p, v| {
            p.topology = (v != "loopback").then_some(v)
        });
        pts = cross(pts, &self.link, |p, v| p.link = Some(v));
        pts = cross(pts, &self.host_speed, |p, v| p.host_speed = v);
        pts = cross(pts, &self.pin, |p, v| p.pin = Some(v));
        pts = cross(pts, &self.routes, |p, v| p.routes = Some(v));
        pts = cross(pts, &self.checksum_offload, |p, v| p.checksum_offload = v);
        pts = cross(pts, &self.layer, |p, v| p.layer = Some(v));
        Ok(pts)
    }

    /// Names (as in `TrialParams`) of the factors with more than one level:
    /// the columns that tell sweep points apart.
    pub fn varying(&self) -> Vec<&'static str> {
        let counts = [
            ("bytes", self.bytes.len()),
            ("duration_s", self.duration_s.len()),
            ("write_size", self.write_size.len()),
            ("read_size", self.read_size.len()),
            ("sndbuf", self.sndbuf.len()),
            ("rcvbuf", self.rcvbuf.len()),
            ("rcvlowat", self.rcvlowat.len()),
            ("nodelay", self.nodelay.len()),
            ("cork", self.cork.len()),
            ("quickack", self.quickack.len()),
            ("mss", self.mss.len()),
            ("cc", self.cc.len()),
            ("parallel", self.parallel.len()),
            ("reverse", self.reverse.len()),
            ("ipv6", self.ipv6.len()),
            ("api", self.api.len()),
            ("send_rate_bps", self.send_rate_bps.len()),
            ("recv_work_ns_per_kb", self.recv_work_ns_per_kb.len()),
            ("load", self.load.len()),
            ("topology", self.topology.len()),
            ("link", self.link.len()),
            ("host_speed", self.host_speed.len()),
            ("pin", self.pin.len()),
            ("routes", self.routes.len()),
            ("checksum_offload", self.checksum_offload.len()),
            ("layer", self.layer.len()),
        ];
        counts
            .iter()
            .filter(|(_, n)| *n > 1)
            .map(|(k, _)| *k)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cartesian_product_in_order() {
        let f = Factors {
            write_size: vec![10, 100, 1000],
            nodelay: vec![false, true],
            ..Factors::default()
        };
        let pts = f.expand(TestKind::TcpStream).unwrap();
        assert_eq!(pts.len(), 6);
        assert_eq!((pts[0].write_size, pts[0].nodelay), (10, false));
        assert_eq!((pts[1].write_size, pts[1].nodelay), (10, true));
        assert_eq!((pts[5].write_size, pts[5].nodelay), (1000, true));
        assert_eq!(f.varying(), vec!["write_size", "nodelay"]);
    }

    #[test]
    fn bytes_replace_the_default_duration() {
        let f = Factors {
            bytes: vec![1 << 20],
            ..Factors::default()
        };
        let p = &f.expand(TestKind::TcpStream).unwrap()[0];
        assert_eq!((p.bytes, p.duration_s), (Some(1 << 20), None));
        let both = Factors {
            bytes: vec![1],
            duration_s: vec![1.0],
            ..Factors::default()
        };
        assert!(both.expand(TestKind::TcpStream).is_err());
    }
}
