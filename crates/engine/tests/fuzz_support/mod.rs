//! Strategies shared by the control-protocol fuzz tests (proto_fuzz.rs for
//! the frame decoder, server_fuzz.rs for a real server): messages, frame
//! bodies that are nearly messages or junk, and the frames around them.
//!
//! A campaign's size is fixed in the tests' config so CI is bounded;
//! `scripts/fuzz-long` raises it with `TCPLAB_FUZZ_CASES`.

#![allow(dead_code)] // each test binary uses part of this module

use engine::proto::{Message, MAGIC, VERSION};
use engine::report::{SideReport, UdpCounters};
use engine::tcpinfo::TcpInfo;
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::sample::Index;
use record::{Api, TestKind, TrialParams};
use serde_json::Value;

/// Cases per property: the whole number in the environment variable `var`
/// (set by scripts/fuzz-long), or `ci_default`.
pub fn cases(var: &str, ci_default: u32) -> u32 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ci_default)
}

/// The config of a bounded campaign of `ci_default` cases a property, or
/// `TCPLAB_FUZZ_CASES` (no regression files: failures found are kept as
/// named tests instead).
pub fn config(ci_default: u32) -> ProptestConfig {
    config_from("TCPLAB_FUZZ_CASES", ci_default)
}

/// [`config`] with the case count from `var`.
pub fn config_from(var: &str, ci_default: u32) -> ProptestConfig {
    ProptestConfig {
        cases: cases(var, ci_default),
        failure_persistence: None,
        max_shrink_iters: 2048,
        ..ProptestConfig::default()
    }
}

/// One frame: magic, `version`, `declared` length, then `body` as given
/// (which need not be `declared` bytes long).
pub fn frame(version: u16, declared: u32, body: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(10 + body.len());
    f.extend_from_slice(&MAGIC);
    f.extend_from_slice(&version.to_be_bytes());
    f.extend_from_slice(&declared.to_be_bytes());
    f.extend_from_slice(body);
    f
}

/// A well-formed frame around `body`.
pub fn good_frame(body: &[u8]) -> Vec<u8> {
    frame(VERSION, body.len() as u32, body)
}

/// The JSON payload `write_message` sends for `m`.
pub fn body_of(m: &Message) -> Vec<u8> {
    serde_json::to_vec(m).expect("messages serialize")
}

/// Tests whose server side needs no privilege and no special kernel
/// support (layer-rate's eth and ip layers open raw sockets).
pub fn unprivileged_test() -> impl Strategy<Value = TestKind> {
    prop_oneof![
        Just(TestKind::TcpStream),
        Just(TestKind::UdpStream),
        Just(TestKind::TcpRr),
        Just(TestKind::TcpCrr),
        Just(TestKind::Http),
    ]
}

/// A size: often legal and small, sometimes an edge or anything.
fn size() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 1..=70_000u64,
        1 => Just(0u64),
        1 => Just(u64::MAX),
        1 => any::<u64>(),
    ]
}

/// `(bytes, duration_s)`: mostly one tiny amount, sometimes both, neither
/// or out of range.
fn amount() -> impl Strategy<Value = (Option<u64>, Option<f64>)> {
    prop_oneof![
        4 => (1..=65_536u64).prop_map(|b| (Some(b), None)),
        2 => (0.05..0.3f64).prop_map(|d| (None, Some(d))),
        1 => Just((None, None)),
        1 => (any::<u64>(), any::<f64>()).prop_map(|(b, d)| (Some(b), Some(d))),
        1 => any::<f64>().prop_map(|d| (None, Some(d))),
        1 => Just((Some(0), None)),
    ]
}

/// A trial's factors as a client could send them: the test's defaults
/// with the factors a server checks set to legal, edge or absurd values.
/// The pacing, receive-work and load factors stay unset: they start
/// long-running work on the server that the hardening work bounds, not
/// the protocol.
pub fn trial_params() -> BoxedStrategy<TrialParams> {
    let buffers = (
        size(),
        size(),
        prop::option::of(size()),
        prop::option::of(size()),
        prop::option::weighted(0.1, size()),
    );
    let flags = (
        any::<bool>(),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.9),
        prop::bool::weighted(0.2),
    );
    let tcp = (
        prop_oneof![4 => 1..=2u32, 1 => any::<u32>()],
        prop::option::weighted(0.1, any::<u32>()),
        prop::option::weighted(0.1, "[a-z_]{0,16}|.{0,4}"),
        prop_oneof![
            6 => Just(Api::Write),
            1 => Just(Api::Sendmsg),
            1 => Just(Api::Sendfile),
            1 => Just(Api::Zerocopy),
        ],
    );
    (unprivileged_test(), amount(), buffers, flags, tcp)
        .prop_map(|(test, (bytes, duration_s), buffers, flags, tcp)| {
            let mut p = TrialParams::defaults(test);
            p.bytes = bytes;
            p.duration_s = duration_s;
            let (write, read, sndbuf, rcvbuf, rcvlowat) = buffers;
            if write > 0 && write < 70_000 {
                // Keep the test's own default size most of the time.
                if write % 2 == 0 {
                    p.write_size = write;
                }
            } else {
                p.write_size = write;
            }
            p.read_size = read;
            p.sndbuf = sndbuf;
            p.rcvbuf = rcvbuf;
            p.rcvlowat = rcvlowat;
            let (nodelay, cork, quickack, connect, reverse) = flags;
            p.nodelay = nodelay;
            p.cork = cork;
            p.quickack = quickack;
            p.connect = connect;
            p.reverse = reverse;
            let (parallel, mss, cc, api) = tcp;
            p.parallel = parallel;
            p.mss = mss;
            p.cc = cc;
            p.api = api;
            p
        })
        .boxed()
}

/// A short trial every server with limits of at least 2 flows, 0.3 s, 1 MiB
/// and 64 KiB reads and writes accepts: `(test, bytes or seconds, flows,
/// reverse)` of an unprivileged test with small buffers.
pub fn legal_trial() -> BoxedStrategy<TrialParams> {
    let amount = prop_oneof![
        (1..=65_536u64).prop_map(|b| (Some(b), None)),
        (0.02..0.3f64).prop_map(|d| (None, Some(d))),
    ];
    (unprivileged_test(), amount, 1..=2u32, any::<bool>())
        .prop_map(|(test, (bytes, duration_s), parallel, reverse)| {
            let mut p = TrialParams::defaults(test);
            p.bytes = bytes;
            p.duration_s = duration_s;
            p.parallel = parallel;
            p.read_size = 16 << 10;
            if test == TestKind::TcpStream {
                p.write_size = 16 << 10;
            }
            p.reverse = reverse && matches!(test, TestKind::TcpStream | TestKind::UdpStream);
            p
        })
        .boxed()
}

/// A side report with arbitrary (finite) numbers and a few connections.
pub fn side_report() -> BoxedStrategy<SideReport> {
    (
        any::<u64>(),
        -1e12..1e12f64,
        vec(any::<u32>(), 0..4),
        prop::option::of(any::<u64>()),
    )
        .prop_map(|(bytes, wall_s, rtts, udp)| SideReport {
            bytes,
            wall_s,
            tcp_info: rtts
                .into_iter()
                .map(|rtt_us| TcpInfo {
                    rtt_us,
                    ..TcpInfo::default()
                })
                .collect(),
            udp: udp.map(|sent| UdpCounters {
                sent,
                ..UdpCounters::default()
            }),
            ..SideReport::default()
        })
        .boxed()
}

/// Any message of the protocol, in either direction.
pub fn message() -> BoxedStrategy<Message> {
    prop_oneof![
        any::<String>().prop_map(|client| Message::Hello { client }),
        any::<String>().prop_map(|server| Message::Welcome {
            server,
            key: None,
            checks: false
        }),
        trial_params().prop_map(|params| Message::Check { params }),
        Just(Message::Checked),
        trial_params().prop_map(|params| Message::Setup { params }),
        vec(any::<u16>(), 0..40).prop_map(|ports| Message::Ready { ports, token: None }),
        Just(Message::ClientDone),
        side_report().prop_map(|report| Message::Report { report }),
        any::<String>().prop_map(|message| Message::Error { message }),
    ]
    .boxed()
}

/// Any JSON value, a few levels deep.
pub fn json_value() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            btree_map(key(), inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .boxed()
}

/// An object key: one the protocol uses, or anything.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "type",
            "client",
            "server",
            "params",
            "ports",
            "report",
            "message",
            "test",
            "bytes",
            "duration_s",
            "write_size",
            "read_size",
            "parallel",
            "reverse",
            "layer",
            "connect",
        ])
        .prop_map(String::from),
        ".{0,8}",
    ]
}

/// `depth` levels of arrays or objects around `null`.
pub fn nested(depth: usize, objects: bool) -> String {
    let (open, close) = if objects {
        (r#"{"a":"#, "}")
    } else {
        ("[", "]")
    };
    format!("{}null{}", open.repeat(depth), close.repeat(depth))
}

/// A frame body that is a message, nearly one, or junk.
pub fn body() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        // A real message.
        3 => message().prop_map(|m| body_of(&m)),
        // A real message with one field replaced, added or removed.
        3 => (message(), key(), prop::option::of(json_value())).prop_map(|(m, k, v)| {
            let mut j = serde_json::to_value(&m).expect("messages are JSON");
            replace_field(&mut j, k, v);
            serde_json::to_vec(&j).expect("JSON serializes")
        }),
        // A setup whose factors have one field replaced.
        3 => (trial_params(), key(), prop::option::of(json_value())).prop_map(|(p, k, v)| {
            let mut j = serde_json::to_value(p).expect("params are JSON");
            replace_field(&mut j, k, v);
            serde_json::to_vec(&serde_json::json!({"type": "setup", "params": j}))
                .expect("JSON serializes")
        }),
        // Any JSON at all, sometimes tagged as a message.
        2 => (json_value(), prop::option::of(key())).prop_map(|(v, tag)| {
            let v = match (v, tag) {
                (Value::Object(mut o), Some(t)) => {
                    o.insert("type".into(), Value::from(t));
                    Value::Object(o)
                }
                (v, _) => v,
            };
            serde_json::to_vec(&v).expect("JSON serializes")
        }),
        // Deep nesting, alone or inside a message's string field.
        1 => (1..20_000usize, any::<bool>(), any::<bool>()).prop_map(|(d, objects, wrapped)| {
            let inner = nested(d, objects);
            if wrapped {
                format!(r#"{{"type":"hello","client":{inner}}}"#).into_bytes()
            } else {
                inner.into_bytes()
            }
        }),
        // A real message with a few bytes changed.
        2 => (message(), vec((any::<Index>(), any::<u8>()), 1..4)).prop_map(|(m, edits)| {
            let mut b = body_of(&m);
            for (at, byte) in edits {
                let i = at.index(b.len());
                b[i] = byte;
            }
            b
        }),
        // A message's fields as an array, tag first (serde would read some
        // of these as messages; the protocol does not).
        1 => (message(), any::<bool>()).prop_map(|(m, tagged)| {
            let j = serde_json::to_value(&m).expect("messages are JSON");
            let fields = j.as_object().expect("messages are objects");
            let tag = fields.get("type").filter(|_| tagged);
            let rest = fields.iter().filter(|(k, _)| *k != "type").map(|(_, v)| v);
            let items: Vec<&Value> = tag.into_iter().chain(rest).collect();
            serde_json::to_vec(&items).expect("JSON serializes")
        }),
        // Bytes.
        1 => vec(any::<u8>(), 0..64),
    ]
    .boxed()
}

/// Sets (or with `None` removes) `key` of `j` if it is an object.
fn replace_field(j: &mut Value, key: String, v: Option<Value>) {
    if let Value::Object(o) = j {
        match v {
            Some(v) => {
                o.insert(key, v);
            }
            None => {
                o.remove(&key);
            }
        }
    }
}

/// A declared length: any, or near the limit.
pub fn declared_length() -> impl Strategy<Value = u32> {
    use engine::proto::MAX_FRAME;
    prop_oneof![
        2 => 0..=4_096u32,
        1 => (MAX_FRAME - 2)..=(MAX_FRAME + 2),
        1 => Just(u32::MAX),
        2 => any::<u32>(),
    ]
}
