//! The frame decoder on any bytes: frame after frame until the stream is
//! lost. It must not panic, must consume at least a header per frame it
//! returns, and must agree with serde on every well-framed payload.

#![no_main]

use engine::proto::{read_message, FrameError};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    loop {
        let before = rest.len();
        match read_message(&mut rest) {
            Ok(m) => {
                assert!(before - rest.len() >= 10);
                // What the decoder returns, it can send back unchanged.
                let mut again = Vec::new();
                engine::proto::write_message(&mut again, &m).unwrap();
                assert_eq!(read_message(&mut again.as_slice()).unwrap(), m);
            }
            Err(e) if e.recoverable() => assert!(before - rest.len() >= 10),
            Err(FrameError::BadVersion(_)) => {}
            Err(_) => break,
        }
    }
});
