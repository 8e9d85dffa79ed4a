//! Writes the seed corpora (fuzz/seeds/TARGET/NAME): one valid frame per
//! message type for the decoder, and whole sessions (hello, setup of each
//! unprivileged test, client_done) for the server. Run from fuzz/:
//! `cargo run --example write_seeds`.

use engine::proto::{write_frame, write_message, Message, VERSION};
use engine::report::SideReport;
use record::{TestKind, TrialParams};
use std::path::Path;

fn frames(ms: &[Message]) -> Vec<u8> {
    let mut b = Vec::new();
    for m in ms {
        write_message(&mut b, m).unwrap();
    }
    b
}

fn save(target: &str, name: &str, bytes: &[u8]) {
    let dir = Path::new("seeds").join(target);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), bytes).unwrap();
}

fn main() {
    let hello = Message::Hello {
        client: "tcplab 0.1.0".into(),
    };
    let tiny = |test: TestKind| {
        let mut p = TrialParams::defaults(test);
        p.duration_s = None;
        p.bytes = Some(1000);
        p.read_size = 16 << 10;
        if test == TestKind::TcpStream {
            p.write_size = 16 << 10;
        }
        p
    };
    let mut singles = vec![
        ("hello", hello.clone()),
        (
            "welcome",
            Message::Welcome {
                server: "tcplab 0.1.0".into(),
            },
        ),
        (
            "ready",
            Message::Ready {
                ports: vec![40000, 40001],
                token: None,
            },
        ),
        ("client_done", Message::ClientDone),
        (
            "report",
            Message::Report {
                report: SideReport::default(),
            },
        ),
        (
            "error",
            Message::Error {
                message: "server busy".into(),
            },
        ),
    ];
    for test in [
        TestKind::TcpStream,
        TestKind::UdpStream,
        TestKind::TcpRr,
        TestKind::TcpCrr,
        TestKind::Http,
    ] {
        let name: &'static str = Box::leak(format!("setup-{test}").into_boxed_str());
        singles.push((name, Message::Setup { params: tiny(test) }));
        let session = frames(&[
            hello.clone(),
            Message::Setup { params: tiny(test) },
            Message::ClientDone,
        ]);
        save("server_session", &format!("session-{test}"), &session);
    }
    for (name, m) in &singles {
        save("decode_frame", name, &frames(std::slice::from_ref(m)));
    }
    let mut odd = Vec::new();
    write_frame(&mut odd, VERSION, br#"{"type":"hello","client":[[[[]]]]}"#).unwrap();
    save("decode_frame", "nested", &odd);
    save(
        "server_session",
        "setup-before-hello",
        &frames(&[Message::Setup {
            params: tiny(TestKind::TcpRr),
        }]),
    );
    save(
        "server_session",
        "two-hellos",
        &frames(&[hello.clone(), hello.clone()]),
    );
    save(
        "server_session",
        "report-outside-a-trial",
        &frames(&[
            hello,
            Message::Report {
                report: SideReport::default(),
            },
        ]),
    );
}
