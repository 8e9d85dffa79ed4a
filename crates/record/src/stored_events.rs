//! A trial's probe records read back and decoded, with the layout version
//! checked once here rather than by every reader.

use crate::probe_event::{decode_all, ProbeEvent, EVENT_VERSION};
use crate::store::{Store, StoreError};

/// Why a trial's probe records cannot be read back.
#[derive(Debug, thiserror::Error)]
pub enum StoredEventsError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The records were stored with a record layout this build does not read.
    #[error("probe records of layout version {stored}, this tcplab reads {reads}")]
    Version {
        /// The layout version stored with the records.
        stored: u32,
        /// The layout version this build decodes ([`EVENT_VERSION`]).
        reads: u32,
    },
}

impl Store {
    /// The probe records of trial `trial_id`, decoded: `None` when the trial
    /// was not probed, an error when they were stored in another layout.
    pub fn load_probe_events(
        &self,
        trial_id: i64,
    ) -> Result<Option<Vec<ProbeEvent>>, StoredEventsError> {
        let Some(blob) = self.load_events(trial_id)? else {
            return Ok(None);
        };
        if blob.version != EVENT_VERSION {
            return Err(StoredEventsError::Version {
                stored: blob.version,
                reads: EVENT_VERSION,
            });
        }
        Ok(Some(decode_all(&blob.data)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe_event::{encode_all, ProbeId};
    use crate::{
        EventBlob, HostFacts, PointRecord, RunMeta, RunStatus, TestKind, TrialOutcome, TrialParams,
        TrialRecord, TrialStatus,
    };

    fn event(ts_ns: u64) -> ProbeEvent {
        ProbeEvent {
            ts_ns,
            id: 1,
            len: 100,
            seq: 0,
            ack: 0,
            ifindex: 1,
            x: [0; 4],
            sport: 1,
            dport: 2,
            win: 0,
            probe: ProbeId::DevQueue as u8,
            flags: 0,
            cpu: 0,
            tid: 3,
        }
    }

    /// Stores a run with one trial per blob; returns the trial ids.
    fn store_trials(store: &mut Store, blobs: Vec<Option<EventBlob>>) -> Vec<i64> {
        let meta = RunMeta {
            id: 0,
            kind: "tcp-stream".into(),
            command: "tcplab bench tcp-stream".into(),
            seed: 1,
            place: "loopback".into(),
            started_at: "2024-01-01T00:00:00Z".into(),
            finished_at: None,
            status: RunStatus::Completed,
            host: HostFacts::default(),
            settings: serde_json::json!({}),
            tool_version: "test".into(),
        };
        let run = store.create_run(&meta).unwrap();
        let point = PointRecord {
            id: 0,
            index: 0,
            params: TrialParams::defaults(TestKind::TcpStream),
            precision: None,
        };
        let point_id = store.add_point(run, &point).unwrap();
        blobs
            .into_iter()
            .enumerate()
            .map(|(i, events)| {
                let t = TrialRecord {
                    id: 0,
                    point_id,
                    seq: i as u32,
                    repetition: i as u32,
                    started_at: "2024-01-01T00:00:00Z".into(),
                    status: TrialStatus::Ok,
                    error: None,
                    outcome: TrialOutcome {
                        events,
                        ..TrialOutcome::default()
                    },
                };
                store.add_trial(run, &t).unwrap()
            })
            .collect()
    }

    #[test]
    fn probe_events_decode_only_in_this_layout() {
        let mut store = Store::open_in_memory().unwrap();
        let events = vec![event(10), event(20)];
        let blob = |version| EventBlob {
            version,
            record_size: crate::probe_event::EVENT_SIZE as u32,
            data: encode_all(&events),
        };
        let ids = store_trials(
            &mut store,
            vec![
                Some(blob(EVENT_VERSION)),
                Some(blob(EVENT_VERSION + 1)),
                None,
            ],
        );
        assert_eq!(store.load_probe_events(ids[0]).unwrap(), Some(events));
        match store.load_probe_events(ids[1]) {
            Err(e @ StoredEventsError::Version { stored, reads }) => {
                assert_eq!((stored, reads), (EVENT_VERSION + 1, EVENT_VERSION));
                assert_eq!(
                    e.to_string(),
                    format!(
                        "probe records of layout version {}, this tcplab reads {}",
                        EVENT_VERSION + 1,
                        EVENT_VERSION
                    )
                );
            }
            other => panic!("expected a version error, got {other:?}"),
        }
        assert_eq!(store.load_probe_events(ids[2]).unwrap(), None);
    }
}
