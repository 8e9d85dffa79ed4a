//! `tcplab bench layer-rate` between two real namespaces: raw Ethernet
//! frames (AF_PACKET), raw IP, UDP and TCP each deliver packets whose
//! received size is the frame size asked for, larger frames carry more
//! bits per second, and the test refuses the host's own loopback.

mod common;

use common::{json_of, tcplab, temp_db, usage_error_line};

#[test]
fn every_layer_delivers_frames_of_the_size_asked() {
    if !testkit::need_root("raw sockets and namespaces need root") {
        return;
    }
    let (_dir, db) = temp_db();
    // Packet and bit rates of 0.3 s trials are timed: one timed test at a
    // time, and the rates of a run that others left alone.
    let _timing = testkit::timing_lock();
    let q = testkit::until_quiet("layer rates", testkit::QuietLimits::default(), &[], || {
        json_of(&tcplab(
            &db,
            &[
                "bench",
                "layer-rate",
                "--topology",
                "veth",
                "--layer",
                "eth,ip,udp,tcp",
                "--write-size",
                "128,1500",
                "--duration",
                "0.3s",
                "--repeat",
                "1",
                "--json",
            ],
        ))
    });
    eprintln!("layer rates: {}", q.describe());
    let doc = q.value;
    let points = doc["points"].as_array().unwrap();
    assert_eq!(points.len(), 8);
    let m = |layer: &str, size: u64, k: &str| -> f64 {
        points
            .iter()
            .find(|p| p["params"]["layer"] == layer && p["params"]["write_size"] == size)
            .unwrap_or_else(|| panic!("no point {layer} {size}"))["metrics"][k]["mean"]
            .as_f64()
            .unwrap_or_else(|| panic!("{layer} {size}: no {k} in {doc}"))
    };
    for layer in ["eth", "ip", "udp", "tcp"] {
        for size in [128u64, 1500] {
            assert!(m(layer, size, "packets_per_s") > 1000.0, "{layer} {size}");
            let frame = m(layer, size, "frame_bytes");
            if layer == "tcp" {
                // Segments may coalesce up to the MSS (1448 B: a 1514 B
                // frame) or, now and then, be split short of a write.
                assert!(
                    frame >= size as f64 * 0.98 && frame <= 1514.0,
                    "{layer} {size}: {frame}"
                );
            } else {
                assert!((frame - size as f64).abs() < 0.5, "{layer} {size}: {frame}");
            }
        }
        assert!(
            m(layer, 1500, "throughput_bps") > m(layer, 128, "throughput_bps"),
            "{layer}: bigger frames carry more bits"
        );
    }
}

#[test]
fn layer_rate_refuses_loopback_and_bad_frames() {
    let (_dir, db) = temp_db();
    for args in [
        vec!["bench", "layer-rate", "--layer", "eth"],
        vec![
            "bench",
            "layer-rate",
            "--topology",
            "veth",
            "--write-size",
            "2000",
        ],
        vec![
            "bench",
            "layer-rate",
            "--topology",
            "veth",
            "--layer",
            "sctp",
        ],
        vec!["bench", "tcp-stream", "--layer", "tcp"],
        vec!["bench", "layer-rate", "--topology", "veth", "--ipv6"],
        vec!["bench", "layer-rate", "--to", "127.0.0.1"],
    ] {
        let out = tcplab(&db, &args);
        usage_error_line(&out, &format!("{args:?}"));
    }
}
