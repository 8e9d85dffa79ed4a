//! The frame decoder under arbitrary input (structure-aware property
//! tests): valid headers with mutated lengths, versions and JSON, truncated
//! frames, huge declared lengths and deep nesting never panic, always
//! consume what they say, and never allocate more than the frame limit
//! allows. A counting allocator measures each decode's peak allocation on
//! its own thread.

mod fuzz_support;

use engine::proto::{read_message, FrameError, Message, MAX_FRAME, VERSION};
use fuzz_support::{
    body, body_of, config, config_from, declared_length, frame, good_frame, message, nested,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, counting each thread's live and peak bytes.
struct PeakAlloc;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn grew(n: usize) {
    let _ = LIVE.try_with(|live| {
        live.set(live.get() + n as isize);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(live.get())));
    });
}

fn shrank(n: usize) {
    let _ = LIVE.try_with(|live| live.set(live.get() - n as isize));
}

// SAFETY: every call is passed to the system allocator unchanged; the
// counters are const-initialised thread-locals, which do not allocate.
unsafe impl GlobalAlloc for PeakAlloc {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = System.alloc(l);
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(l);
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l);
        shrank(l.size());
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = System.realloc(p, l, new);
        if !q.is_null() {
            shrank(l.size());
            grew(new);
        }
        q
    }
}

#[global_allocator]
static ALLOC: PeakAlloc = PeakAlloc;

/// Runs `f` and returns its result and the most bytes it had allocated at
/// once on this thread (beyond what was live before).
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(before));
    let r = f();
    let peak = PEAK.with(Cell::get) - before;
    (r, peak.max(0) as usize)
}

/// What decoding one frame from the front of `input` gave, how many bytes
/// it consumed, and its peak allocation.
fn decode(input: &[u8]) -> (Result<Message, FrameError>, usize, usize) {
    let mut rest = input;
    let (r, peak) = peak_of(|| read_message(&mut rest));
    (r, input.len() - rest.len(), peak)
}

/// The most a decode of a frame of `len` payload bytes may allocate: the
/// payload, what its JSON becomes (a `Vec` grows to at most twice its
/// length, and a value is never much larger than its text), and a little.
fn allowed(len: usize) -> usize {
    4 * len + 64 * 1024
}

/// What a payload should decode to: what serde's derived `Deserialize`
/// makes of a JSON object; anything else is not a message.
fn reference(body: &[u8]) -> Result<Message, String> {
    match body.trim_ascii_start().first() {
        Some(b'{') => serde_json::from_slice(body).map_err(|e| e.to_string()),
        _ => Err("not an object".into()),
    }
}

fn is_eof(e: &FrameError) -> bool {
    matches!(e, FrameError::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof)
}

proptest! {
    #![proptest_config(config(3000))]

    /// Every message survives encoding and decoding unchanged, consuming
    /// exactly its frame.
    #[test]
    fn messages_round_trip(m in message()) {
        let f = good_frame(&body_of(&m));
        let (r, used, _) = decode(&f);
        prop_assert_eq!(r.unwrap(), m);
        prop_assert_eq!(used, f.len());
    }

    /// A frame body, whatever it holds, decodes exactly as serde reads it
    /// (a message, or a recoverable `Malformed`), consumes exactly its frame,
    /// and allocates in proportion to its length.
    #[test]
    fn any_body_decodes_as_serde_reads_it(b in body()) {
        let f = good_frame(&b);
        let (r, used, peak) = decode(&f);
        prop_assert_eq!(used, f.len());
        match (r, reference(&b)) {
            (Ok(got), Ok(want)) => prop_assert_eq!(got, want),
            (Err(e), Err(_)) => prop_assert!(e.recoverable(), "{}", e),
            (got, want) => prop_assert!(false, "decoder {:?}, serde {:?}", got, want),
        }
        prop_assert!(peak <= allowed(b.len()), "{} bytes for a {}-byte body", peak, b.len());
    }

    /// A header with any version and declared length, followed by up to
    /// 4 KiB: a length over the limit is refused after the header without
    /// allocating it; a short body is an end-of-stream error; a wrong
    /// version consumes its frame; nothing allocates more than the limit.
    #[test]
    fn declared_lengths_are_bounded(
        version in prop_oneof![3 => Just(VERSION), 1 => any::<u16>()],
        declared in declared_length(),
        sent in vec(any::<u8>(), 0..4096),
    ) {
        let f = frame(version, declared, &sent);
        let (r, used, peak) = decode(&f);
        if declared > MAX_FRAME {
            prop_assert!(matches!(r, Err(FrameError::TooLong(n, _)) if n == declared), "{:?}", r);
            prop_assert_eq!(used, 10);
            prop_assert!(peak < 1024, "{} bytes allocated for a refused length", peak);
        } else if (declared as usize) > sent.len() {
            prop_assert!(matches!(&r, Err(e) if is_eof(e)), "{:?}", r);
            prop_assert!(peak <= declared as usize + 1024, "{} bytes for {}", peak, declared);
        } else {
            prop_assert_eq!(used, 10 + declared as usize);
            if version != VERSION {
                prop_assert!(matches!(r, Err(FrameError::BadVersion(v)) if v == version), "{:?}", r);
            } else {
                prop_assert!(r.is_ok() || r.as_ref().is_err_and(FrameError::recoverable), "{:?}", r);
            }
            prop_assert!(peak <= allowed(declared as usize), "{} bytes for {}", peak, declared);
        }
    }

    /// A frame cut anywhere: nothing is a clean close, anything else is an
    /// end-of-stream error, never a message or a panic.
    #[test]
    fn truncated_frames_are_errors(m in message(), cut in any::<Index>()) {
        let f = good_frame(&body_of(&m));
        let cut = cut.index(f.len());
        let (r, _, _) = decode(&f[..cut]);
        if cut == 0 {
            prop_assert!(matches!(r, Err(FrameError::Closed)), "{:?}", r);
        } else {
            prop_assert!(matches!(&r, Err(e) if is_eof(e)), "cut at {}: {:?}", cut, r);
        }
    }

    /// Any bytes at all, decoded frame after frame: no panic, every frame
    /// decoded consumes at least a header, and the loop ends.
    #[test]
    fn any_bytes_decode_without_panic(
        frames in vec(body(), 0..4),
        noise in vec(any::<u8>(), 0..256),
        edits in vec((any::<Index>(), any::<u8>()), 0..8),
    ) {
        let mut input: Vec<u8> = frames.iter().flat_map(|b| good_frame(b)).collect();
        input.extend_from_slice(&noise);
        for (at, byte) in edits {
            let i = at.index(input.len().max(1));
            if i < input.len() {
                input[i] = byte;
            }
        }
        let mut rest = input.as_slice();
        let mut decoded = 0;
        loop {
            let (r, used, peak) = decode(rest);
            prop_assert!(peak <= allowed(MAX_FRAME as usize), "{}", peak);
            rest = &rest[used..];
            match r {
                Ok(_) => prop_assert!(used >= 10),
                Err(e) if e.recoverable() => prop_assert!(used >= 10),
                Err(_) => break,
            }
            decoded += 1;
            prop_assert!(decoded <= input.len() / 10);
        }
    }

    /// Frames after a malformed one still decode: a bad payload does not
    /// lose the stream's sync.
    #[test]
    fn the_stream_stays_in_sync_after_bad_payloads(bodies in vec(body(), 1..8)) {
        let input: Vec<u8> = bodies.iter().flat_map(|b| good_frame(b)).collect();
        let mut rest = input.as_slice();
        for b in &bodies {
            let (r, used, _) = decode(rest);
            prop_assert_eq!(used, 10 + b.len());
            rest = &rest[used..];
            match (r, reference(b)) {
                (Ok(got), Ok(want)) => prop_assert_eq!(got, want),
                (Err(e), Err(_)) => prop_assert!(e.recoverable(), "{}", e),
                (got, want) => prop_assert!(false, "decoder {:?}, serde {:?}", got, want),
            }
        }
        prop_assert!(matches!(decode(rest).0, Err(FrameError::Closed)));
    }
}

proptest! {
    #![proptest_config(config_from("TCPLAB_FUZZ_DEEP_CASES", 200))]

    /// Nesting up to the frame limit, bare or inside a message, is a
    /// recoverable error (serde_json stops at depth 128), not a stack
    /// overflow.
    #[test]
    fn deep_nesting_is_refused(
        depth in 1..(MAX_FRAME as usize / 6),
        objects in any::<bool>(),
        wrapped in any::<bool>(),
    ) {
        let inner = nested(depth, objects);
        let b = if wrapped {
            format!(r#"{{"type":"hello","client":{inner}}}"#)
        } else {
            inner
        };
        prop_assume!(b.len() <= MAX_FRAME as usize);
        let (r, _, peak) = decode(&good_frame(b.as_bytes()));
        prop_assert!(r.as_ref().is_err_and(FrameError::recoverable), "{:?}", r.map(|_| ()));
        prop_assert!(peak <= allowed(b.len()), "{} bytes for {}", peak, b.len());
    }
}

/// A payload that is not a JSON object is malformed, even where serde
/// would read an array as a message (`["hello","x"]` as a hello).
#[test]
fn only_objects_are_messages() {
    for b in [
        &br#"["hello","x"]"#[..],
        b"[\"client_done\"]",
        b"\"hello\"",
        b"",
        b"  ",
    ] {
        let (r, used, _) = decode(&good_frame(b));
        assert!(r.as_ref().is_err_and(FrameError::recoverable), "{r:?}");
        assert_eq!(used, 10 + b.len());
    }
    let (r, _, _) = decode(&good_frame(br#" {"type":"hello","client":"x"}"#));
    assert_eq!(r.unwrap(), Message::Hello { client: "x".into() });
}

/// The largest legal frame decodes; one byte more is refused from its header.
#[test]
fn the_frame_limit_is_exact() {
    let overhead = body_of(&Message::Hello { client: "".into() }).len();
    let client = "x".repeat(MAX_FRAME as usize - overhead);
    let f = good_frame(&body_of(&Message::Hello {
        client: client.clone(),
    }));
    assert_eq!(f.len(), 10 + MAX_FRAME as usize);
    let (r, _, peak) = decode(&f);
    assert_eq!(r.unwrap(), Message::Hello { client });
    assert!(peak <= allowed(MAX_FRAME as usize), "{peak}");
    let over = frame(VERSION, MAX_FRAME + 1, b"");
    assert!(matches!(decode(&over).0, Err(FrameError::TooLong(..))));
}

/// The densest frames the limit allows, element for element: a `ready`
/// of zeros, a `hello` carrying an unknown field of zeros, and a `report`
/// of default TCP_INFO. Each decodes within a few times its length.
/// (Found by this campaign: serde's internally tagged enums buffer the
/// payload as generic content first, 32 bytes an element, so the first two
/// took 18 MB each; the decoder now reads the tag, then the variant.)
#[test]
fn the_densest_frames_stay_within_bounds() {
    let zeros = |n: usize| vec!["0"; n].join(",");
    let ports = (MAX_FRAME as usize - 40) / 2;
    let ready = format!(r#"{{"type":"ready","ports":[{}]}}"#, zeros(ports));
    let junk = format!(
        r#"{{"type":"hello","client":"x","junk":[{}]}}"#,
        zeros(ports)
    );
    let one = serde_json::to_string(&engine::tcpinfo::TcpInfo::default()).unwrap();
    let report = body_of(&Message::Report {
        report: engine::report::SideReport {
            tcp_info: vec![
                engine::tcpinfo::TcpInfo::default();
                (MAX_FRAME as usize - 400) / (one.len() + 1)
            ],
            ..Default::default()
        },
    });
    let mut peaks = Vec::new();
    for (name, b) in [
        ("ready", ready.into_bytes()),
        ("hello+junk", junk.into_bytes()),
        ("report", report),
    ] {
        assert!(b.len() <= MAX_FRAME as usize, "{name}: {}", b.len());
        let (r, _, peak) = decode(&good_frame(&b));
        assert!(r.is_ok(), "{name}: {:?}", r);
        peaks.push((name, peak, b.len()));
    }
    println!("peak allocation of the densest frames: {peaks:?}");
    for (name, peak, len) in &peaks {
        assert!(*peak <= allowed(*len), "{name}: {peak} bytes for {len}");
    }
}
