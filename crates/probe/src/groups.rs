//! Probe groups as `--probe` names them, and the programs each one attaches.

use crate::error::ProbeError;
use crate::event::ProbeId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// A family of probes switched on together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeGroup {
    /// The four queues of the SunOS study: send socket, interface (qdisc and
    /// driver), IP input, receive socket.
    Queues,
    /// TCP's view of each arriving segment, receive-buffer autotuning and
    /// retransmissions.
    Tcp,
    /// Scheduler switches of the experiment's threads (idle and blocked time).
    Sched,
    /// Sampling-based CPU attribution per layer and function.
    Cpu,
}

impl ProbeGroup {
    /// Every group, the meaning of `all`.
    pub const ALL: [ProbeGroup; 4] = [
        ProbeGroup::Queues,
        ProbeGroup::Tcp,
        ProbeGroup::Sched,
        ProbeGroup::Cpu,
    ];

    /// The group's name in `--probe`.
    pub fn name(self) -> &'static str {
        match self {
            ProbeGroup::Queues => "queues",
            ProbeGroup::Tcp => "tcp",
            ProbeGroup::Sched => "sched",
            ProbeGroup::Cpu => "cpu",
        }
    }

    /// The tracepoint probes of the group (none for `cpu`, which samples).
    pub fn probes(self) -> &'static [ProbeId] {
        match self {
            ProbeGroup::Queues => &[
                ProbeId::SendApp,
                ProbeId::TcpSendmsg,
                ProbeId::DevQueue,
                ProbeId::QdiscEnqueue,
                ProbeId::QdiscDequeue,
                ProbeId::DevStartXmit,
                ProbeId::DevXmit,
                ProbeId::NetifReceive,
                ProbeId::SkDataReady,
                ProbeId::RecvApp,
            ],
            ProbeGroup::Tcp => &[ProbeId::TcpProbe, ProbeId::RcvSpace, ProbeId::Retransmit],
            ProbeGroup::Sched => &[ProbeId::SchedSwitch],
            ProbeGroup::Cpu => &[],
        }
    }
}

/// Parses `queues,tcp,sched,cpu` or `all` (order and repeats do not matter).
pub fn parse_groups(s: &str) -> Result<BTreeSet<ProbeGroup>, ProbeError> {
    let mut out = BTreeSet::new();
    for item in s.split(',').map(str::trim) {
        match item {
            "all" => out.extend(ProbeGroup::ALL),
            _ => {
                let g = ProbeGroup::ALL
                    .into_iter()
                    .find(|g| g.name() == item)
                    .ok_or_else(|| ProbeError::UnknownGroup(item.to_string()))?;
                out.insert(g);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists_and_all() {
        let g = parse_groups("tcp,queues").unwrap();
        assert_eq!(
            g.into_iter().collect::<Vec<_>>(),
            vec![ProbeGroup::Queues, ProbeGroup::Tcp]
        );
        assert_eq!(parse_groups("all").unwrap().len(), 4);
        assert!(parse_groups("queues,,tcp").is_err());
        assert!(parse_groups("disk").is_err());
    }

    #[test]
    fn every_probe_belongs_to_exactly_one_group() {
        for p in ProbeId::ALL {
            let n = ProbeGroup::ALL
                .iter()
                .filter(|g| g.probes().contains(&p))
                .count();
            assert_eq!(n, 1, "{p:?}");
        }
    }
}
