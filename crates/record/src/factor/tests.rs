//! The factor table's promises: unique flags and keys, keys that are the
//! stored JSON's, levels that round-trip from flag text to every output
//! text, and sweeps in table order.

use super::*;
use serde_json::Value;
use std::collections::BTreeSet;

const LIMITS: HostLimits = HostLimits {
    online_cpus: 4,
    max_routes: 1 << 17,
};

/// The sweep `flag text` gives for one factor alone.
fn levels_of(flag: &str, text: &str) -> Result<Factors, FactorError> {
    Factors::parse(|f| (f.flag == flag).then_some(text), &LIMITS)
}

/// The single point `--flag text` makes for `test`.
fn point(test: TestKind, flag: &str, text: &str) -> TrialParams {
    let pts = levels_of(flag, text).unwrap().expand(test).unwrap();
    assert_eq!(pts.len(), 1, "{flag} {text}");
    pts.into_iter().next().unwrap()
}

#[test]
fn flags_keys_and_setting_keys_are_unique() {
    let flags: BTreeSet<&str> = FACTORS.iter().map(|f| f.flag).collect();
    let keys: BTreeSet<&str> = param_keys().collect();
    let settings: BTreeSet<String> = FACTORS.iter().map(FactorInfo::setting_key).collect();
    assert_eq!(flags.len(), FACTORS.len());
    assert_eq!(keys.len(), FACTORS.len() + 1);
    assert_eq!(settings.len(), FACTORS.len());
    for f in FACTORS {
        assert!(
            !f.help.ends_with('.'),
            "clap's help has no closing period: {}",
            f.flag
        );
        if let Some(other) = f.conflicts_with {
            assert!(
                flags.contains(other),
                "{} conflicts with unknown --{other}",
                f.flag
            );
        }
    }
}

#[test]
fn every_key_is_a_field_stored_under_that_key() {
    for test in TestKind::ALL {
        let p = TrialParams::defaults(test);
        let Value::Object(json) = serde_json::to_value(&p).unwrap() else {
            panic!("params serialize to an object");
        };
        let stored: BTreeSet<&str> = json.keys().map(String::as_str).collect();
        assert_eq!(stored, param_keys().collect::<BTreeSet<_>>());
        for k in param_keys() {
            assert_eq!(p.value(k).unwrap().json(), json[k], "{k} of {test}");
        }
    }
    assert_eq!(TrialParams::defaults(TestKind::TcpRr).value("nope"), None);
}

#[test]
fn stored_params_read_back_with_defaults_for_newer_factors() {
    let mut json = serde_json::to_value(TrialParams::defaults(TestKind::TcpStream)).unwrap();
    let obj = json.as_object_mut().unwrap();
    for k in [
        "rcvlowat",
        "quickack",
        "topology",
        "checksum_offload",
        "layer",
        "connect",
    ] {
        obj.remove(k);
    }
    let p: TrialParams = serde_json::from_value(json).unwrap();
    assert_eq!(p, TrialParams::defaults(TestKind::TcpStream));
}

/// Flag text → stored level → each output's text, one factor of each kind.
#[test]
fn levels_round_trip_to_every_text() {
    struct Case {
        flag: &'static str,
        text: &'static str,
        number: Option<f64>,
        csv: &'static str,
        json: &'static str,
        table: &'static str,
    }
    let case = |flag, text, number, csv, json, table| Case {
        flag,
        text,
        number,
        csv,
        json,
        table,
    };
    let cases = [
        case("write-size", "64K", Some(65536.0), "65536", "65536", "64K"),
        case("duration", "500ms", Some(0.5), "0.5", "0.5", "0.5"),
        case("duration", "2s", Some(2.0), "2", "2.0", "2"),
        case("parallel", "4", Some(4.0), "4", "4", "4"),
        case(
            "send-rate",
            "10mbit",
            Some(1e7),
            "10000000",
            "10000000",
            "10mbit",
        ),
        case("recv-work", "20us", Some(20000.0), "20000", "20000", "20us"),
        case("nodelay", "on", None, "true", "true", "on"),
        case(
            "api",
            "sendfile",
            None,
            "sendfile",
            "\"sendfile\"",
            "sendfile",
        ),
        case("topology", "veth", None, "veth", "\"veth\"", "veth"),
        case("topology", "loopback", None, "", "null", "—"),
        case(
            "load",
            "sender:2",
            None,
            "sender:2",
            r#"{"side":"sender","workers":2}"#,
            "sender:2",
        ),
        case("load", "none", None, "", "null", "none"),
        case("host-speed", "none", None, "", "null", "none"),
        case(
            "host-speed",
            "sender=0.25",
            None,
            "sender=0.25",
            r#"{"fraction":0.25,"side":"sender"}"#,
            "sender=0.25",
        ),
        case(
            "pin",
            "receiver=1",
            None,
            "receiver=1",
            r#"{"receiver":1,"sender":null}"#,
            "receiver=1",
        ),
        case("rcvlowat", "16K", Some(16384.0), "16384", "16384", "16K"),
        case("rcvlowat", "auto", None, "", "null", "auto (32768)"),
        case("layer", "eth", None, "eth", "\"eth\"", "eth"),
    ];
    for c in cases {
        let p = point(TestKind::LayerRate, c.flag, c.text);
        let info = FACTORS.iter().find(|f| f.flag == c.flag).unwrap();
        let v = p.value(info.key).unwrap();
        let what = format!("--{} {}", c.flag, c.text);
        assert_eq!(v.kind, info.kind, "{what}");
        assert_eq!(v.number(), c.number, "{what}");
        assert_eq!(v.csv_text(), c.csv, "{what}");
        assert_eq!(v.json().to_string(), c.json, "{what}");
        assert_eq!(v.table_text(), c.table, "{what}");
        // The table shows a set level as its flag takes it: typed back,
        // it is the same level.
        if !(c.table == "—" || c.table == "none" || c.table.starts_with("auto")) {
            let again = point(TestKind::LayerRate, c.flag, c.table);
            assert_eq!(again.value(info.key).as_ref(), Some(&v), "{what}");
        }
        assert_eq!(
            serde_json::to_value(&p).unwrap()[info.key],
            v.json(),
            "{what}"
        );
    }
}

#[test]
fn bad_levels_name_their_flag_and_value() {
    let e = levels_of("write-size", "10,,20").unwrap_err().to_string();
    assert_eq!(
        e,
        "invalid value \"10,,20\" for --write-size: empty item in the comma-separated list"
    );
    let e = levels_of("pin", "sender=9").unwrap_err().to_string();
    assert_eq!(
        e,
        "invalid value \"9\" for --pin: expected a whole number from 0 to 3"
    );
    assert!(levels_of("routes", "131073").is_err());
}

#[test]
fn one_level_flags_keep_their_commas() {
    let f = levels_of("link", "rate=10mbit,delay=2ms").unwrap();
    assert_eq!(f.link, vec!["rate=10mbit,delay=2ms".to_string()]);
    let f = levels_of("pin", "sender=0,receiver=1").unwrap();
    assert_eq!(f.pin.len(), 1);
    let f = levels_of("cc", "cubic,reno").unwrap();
    assert_eq!(f.cc.len(), 2);
}

#[test]
fn cartesian_product_in_table_order() {
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
    assert_eq!(varying_keys(&pts), vec!["nodelay", "write_size"]);
    // rcvlowat stays `auto` while its resolved level follows the write size.
    let big = levels_of("write-size", "1K,1M")
        .unwrap()
        .expand(TestKind::TcpStream)
        .unwrap();
    assert_ne!(big[0].value("rcvlowat"), big[1].value("rcvlowat"));
    assert_eq!(varying_keys(&big), vec!["write_size"]);
}

#[test]
fn bytes_replace_the_default_duration_and_exclude_duration() {
    let p = point(TestKind::TcpStream, "bytes", "1M");
    assert_eq!((p.bytes, p.duration_s), (Some(1 << 20), None));
    let both = Factors {
        bytes: vec![1],
        duration_s: vec![1.0],
        ..Factors::default()
    };
    assert_eq!(
        both.expand(TestKind::TcpStream).unwrap_err().to_string(),
        "--bytes and --duration are mutually exclusive"
    );
}

#[test]
fn defaults_depend_on_the_test() {
    let rr = TrialParams::defaults(TestKind::TcpRr);
    assert_eq!((rr.write_size, rr.layer), (1, None));
    let lr = TrialParams::defaults(TestKind::LayerRate);
    assert_eq!((lr.write_size, lr.layer), (1514, Some(ProtocolLayer::Tcp)));
    assert!(lr.topology.is_loopback());
    assert_eq!(lr.duration_s, Some(1.0));
}
