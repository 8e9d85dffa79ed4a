//! The control protocol between `tcplab bench` and `tcplab server`.
//!
//! Every message is one frame: the magic `TCPL`, a big-endian u16 protocol
//! version, a big-endian u32 payload length, and a JSON payload tagged by
//! `"type"`. Before a client is authenticated (or, on a server without
//! keys, greeted) a payload may hold at most [`PRE_AUTH_MAX_FRAME`] bytes;
//! after it, [`MAX_FRAME`]. On a keyed connection every frame after
//! `auth_proof` also carries a tag ([`crate::session`]). A frame with a bad
//! magic, version, length or tag loses the stream's sync and ends the
//! connection; a well-framed payload that does not parse gets an `error`
//! reply and the connection stays usable.

use crate::report::SideReport;
use record::TrialParams;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};

/// The protocol version this build speaks (3: frames after a keyed
/// handshake carry a tag).
pub const VERSION: u16 = 3;
/// Frame magic.
pub const MAGIC: [u8; 4] = *b"TCPL";
/// Largest accepted payload.
pub const MAX_FRAME: u32 = 1 << 20;
/// Largest payload accepted before the peer is authenticated (or greeted):
/// a handshake's messages are a few hundred bytes.
pub const PRE_AUTH_MAX_FRAME: u32 = 4096;
/// Frames a connection may send before its handshake completes: a
/// handshake takes two (`auth_hello`, `auth_proof`) or one (`hello`), and
/// a client that got one wrong may be told why twice more. The next
/// frame closes it, so one connection holds the server's handshake loop
/// for a bounded few reads, writes and HMACs.
pub const PRE_AUTH_MAX_FRAMES: u32 = 4;
/// Bytes in a frame's header: magic, version, length.
pub const HEADER_BYTES: usize = 10;

/// A control message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Message {
    /// Client → server, first message.
    Hello {
        /// Client software and version.
        client: String,
    },
    /// Client → server, first message of a client with a key (instead
    /// of `hello`): its nonce, in hex.
    AuthHello {
        /// Client software and version.
        client: String,
        /// 32 fresh random bytes, hex.
        nonce: String,
        /// Which of the server's keys the client holds: `Key::id`, a short
        /// hash of the key, never the key. Absent from older clients (a
        /// server with one key then uses it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key_id: Option<String>,
        /// The key's proof over `nonce` and the client's clock
        /// ([`crate::early_proof`]): a handshake that carries one is never
        /// closed to make room for a connection without it. Absent from
        /// older clients.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        early: Option<crate::early_proof::EarlyProof>,
    },
    /// Server → client, answer to `auth_hello`: the server's nonce and its
    /// proof of the key over both nonces (`auth::SERVER_LABEL`), in hex.
    AuthChallenge {
        /// Server software and version.
        server: String,
        /// 32 fresh random bytes, hex.
        nonce: String,
        /// HMAC-SHA256 of the server label and both nonces, hex.
        proof: String,
    },
    /// Client → server: its proof of the key over both nonces
    /// (`auth::CLIENT_LABEL`), hex. The server answers `welcome` or
    /// `error` and closes.
    AuthProof {
        /// HMAC-SHA256 of the client label and both nonces, hex.
        proof: String,
    },
    /// Server → client, answer to `hello` (or to an accepted `auth_proof`).
    Welcome {
        /// Server software and version.
        server: String,
        /// The name of the client's key on this server (`server --keys`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
        /// Whether the server answers `check` (older servers do not).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        checks: bool,
    },
    /// Client → server, between trials: would this trial be served? The
    /// server answers `checked` or `error` with the refusal it would give
    /// to the `setup` (a pre-flight before anything is stored).
    Check {
        /// The trial's factors.
        params: TrialParams,
    },
    /// Server → client: the checked trial would be served.
    Checked,
    /// Client → server: prepare a trial.
    Setup {
        /// The trial's factors.
        params: TrialParams,
    },
    /// Server → client: data sockets are listening on these ports.
    Ready {
        /// One port per flow for UDP, one listening port for TCP.
        ports: Vec<u16>,
        /// A server with a key: the trial's token (32 random bytes, hex),
        /// the first bytes of every TCP data connection and the payload of
        /// every UDP hello; data without it is refused.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token: Option<String>,
    },
    /// Client → server: the client's side of the trial is done.
    ClientDone,
    /// Server → client: the server's side of the trial, measured.
    Report {
        /// The server's measurements.
        report: SideReport,
    },
    /// Either way: a request could not be served. The connection stays open.
    Error {
        /// What went wrong, for a human.
        message: String,
    },
}

impl Message {
    /// The message's type name, as its `type` field says it.
    pub fn kind(&self) -> &'static str {
        match self {
            Message::Hello { .. } => "hello",
            Message::AuthHello { .. } => "auth_hello",
            Message::AuthChallenge { .. } => "auth_challenge",
            Message::AuthProof { .. } => "auth_proof",
            Message::Welcome { .. } => "welcome",
            Message::Check { .. } => "check",
            Message::Checked => "checked",
            Message::Setup { .. } => "setup",
            Message::Ready { .. } => "ready",
            Message::ClientDone => "client_done",
            Message::Report { .. } => "report",
            Message::Error { .. } => "error",
        }
    }
}

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The peer closed the connection between frames.
    #[error("connection closed")]
    Closed,
    /// Reading failed.
    #[error("reading control connection: {0}")]
    Io(#[from] std::io::Error),
    /// The frame did not start with the magic.
    #[error("not a tcplab control frame (bad magic {0:02x?})")]
    BadMagic([u8; 4]),
    /// The frame's version is not ours.
    #[error("unsupported protocol version {0}; this side speaks version {VERSION}")]
    BadVersion(u16),
    /// The frame is longer than allowed here.
    #[error("control frame of {0} bytes exceeds the limit of {1}{when}", when = before_auth(*.1))]
    TooLong(u32, u32),
    /// A frame of an authenticated connection failed its tag (forged,
    /// replayed, reordered or cut).
    #[error("a control frame failed its authentication tag (forged, replayed or reordered)")]
    BadTag,
    /// The payload is not a known message.
    #[error("malformed control message: {0}")]
    Malformed(String),
}

/// How a frame limit below [`MAX_FRAME`] is named.
fn before_auth(max: u32) -> &'static str {
    if max < MAX_FRAME {
        " before authentication"
    } else {
        ""
    }
}

impl FrameError {
    /// True if the stream is still in sync after this error (only the payload was bad).
    pub fn recoverable(&self) -> bool {
        matches!(self, FrameError::Malformed(_))
    }
}

/// Writes one message as a frame.
pub fn write_message<W: Write>(w: &mut W, m: &Message) -> std::io::Result<()> {
    write_frame(w, VERSION, &encode_body(m)?)
}

/// A message's payload: its JSON.
pub fn encode_body(m: &Message) -> std::io::Result<Vec<u8>> {
    serde_json::to_vec(m).map_err(std::io::Error::other)
}

/// A frame's header for a payload of `len` bytes.
pub fn header(version: u16, len: usize) -> [u8; HEADER_BYTES] {
    let mut h = [0u8; HEADER_BYTES];
    h[..4].copy_from_slice(&MAGIC);
    h[4..6].copy_from_slice(&version.to_be_bytes());
    h[6..].copy_from_slice(&(len as u32).to_be_bytes());
    h
}

/// A frame's version and declared length from its header, or why it is
/// not a frame (bad magic, or longer than `max`).
pub fn parse_header(head: &[u8; HEADER_BYTES], max: u32) -> Result<(u16, u32), FrameError> {
    let magic: [u8; 4] = head[0..4].try_into().expect("4 bytes");
    if magic != MAGIC {
        return Err(FrameError::BadMagic(magic));
    }
    let version = u16::from_be_bytes([head[4], head[5]]);
    let len = u32::from_be_bytes(head[6..10].try_into().expect("4 bytes"));
    if len > max {
        return Err(FrameError::TooLong(len, max));
    }
    Ok((version, len))
}

/// Writes a raw frame (also used by tests to send malformed payloads).
pub fn write_frame<W: Write>(w: &mut W, version: u16, body: &[u8]) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(HEADER_BYTES + body.len());
    buf.extend_from_slice(&header(version, body.len()));
    buf.extend_from_slice(body);
    w.write_all(&buf)?;
    w.flush()
}

/// Reads one frame and parses its message.
pub fn read_message<R: Read>(r: &mut R) -> Result<Message, FrameError> {
    let (version, body) = read_frame(r, MAX_FRAME)?;
    if version != VERSION {
        return Err(FrameError::BadVersion(version));
    }
    parse_body(&body)
}

/// Parses a payload as a message (a recoverable `Malformed` if it is not one).
pub fn parse_body(body: &[u8]) -> Result<Message, FrameError> {
    parse_payload(body).map_err(|e| FrameError::Malformed(e.to_string()))
}

/// Reads one frame of at most `max` payload bytes: its version and payload.
pub fn read_frame<R: Read>(r: &mut R, max: u32) -> Result<(u16, Vec<u8>), FrameError> {
    let mut head = [0u8; HEADER_BYTES];
    match r.read_exact(&mut head[..1]) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
        Err(e) => return Err(FrameError::Io(e)),
    }
    r.read_exact(&mut head[1..])?;
    let (version, len) = parse_header(&head, max)?;
    // The body grows as its bytes arrive (4 KiB, then doubling, never past
    // the declared length), so a peer that declares a megabyte and
    // trickles a few bytes holds kilobytes, not the megabyte it declared.
    let len = len as usize;
    let mut body = Vec::new();
    while body.len() < len {
        let start = body.len();
        let chunk = (len - start).min(start.max(4096));
        body.reserve_exact(chunk);
        body.resize(start + chunk, 0);
        r.read_exact(&mut body[start..])?;
    }
    Ok((version, body))
}

/// The message types, as `type` names them.
const TYPES: &[&str] = &[
    "hello",
    "auth_hello",
    "auth_challenge",
    "auth_proof",
    "welcome",
    "check",
    "checked",
    "setup",
    "ready",
    "client_done",
    "report",
    "error",
];

/// Parses a payload as [`Message`]'s derived `Deserialize` would, but in
/// two passes over the text (the `type` tag, then the variant's fields)
/// instead of serde's buffering of internally tagged enums, which holds
/// every value of the payload as generic content first (32 bytes an
/// element: a 1 MiB frame of `[0,0,…]` took 18 MB). Unknown fields are
/// skipped without being stored. Only a JSON object is a message.
fn parse_payload(body: &[u8]) -> serde_json::Result<Message> {
    use serde::de::Error as _;
    use serde_json::from_slice;
    #[derive(Deserialize)]
    struct Tag<'a> {
        #[serde(rename = "type", borrow)]
        kind: std::borrow::Cow<'a, str>,
    }
    #[derive(Deserialize)]
    struct Hello {
        client: String,
    }
    #[derive(Deserialize)]
    struct AuthHello {
        client: String,
        nonce: String,
        #[serde(default)]
        key_id: Option<String>,
        #[serde(default)]
        early: Option<crate::early_proof::EarlyProof>,
    }
    #[derive(Deserialize)]
    struct AuthChallenge {
        server: String,
        nonce: String,
        proof: String,
    }
    #[derive(Deserialize)]
    struct AuthProof {
        proof: String,
    }
    #[derive(Deserialize)]
    struct Welcome {
        server: String,
        #[serde(default)]
        key: Option<String>,
        #[serde(default)]
        checks: bool,
    }
    #[derive(Deserialize)]
    struct Setup {
        params: TrialParams,
    }
    #[derive(Deserialize)]
    struct Ready {
        ports: Vec<u16>,
        #[serde(default)]
        token: Option<String>,
    }
    #[derive(Deserialize)]
    struct Report {
        report: SideReport,
    }
    #[derive(Deserialize)]
    struct Error {
        message: String,
    }
    if body.trim_ascii_start().first() != Some(&b'{') {
        return Err(serde_json::Error::custom("a message must be a JSON object"));
    }
    // JSON is UTF-8 (RFC 8259 §8.1). serde_json skips an unknown field's
    // string without checking its bytes, so a payload whose only invalid
    // UTF-8 sat in a field this parser ignores was taken, where the
    // derived Deserialize refuses it: check the whole payload first.
    if let Err(e) = std::str::from_utf8(body) {
        return Err(serde_json::Error::custom(format!(
            "a message must be UTF-8: {e}"
        )));
    }
    let tag: Tag = from_slice(body)?;
    Ok(match tag.kind.as_ref() {
        "hello" => Message::Hello {
            client: from_slice::<Hello>(body)?.client,
        },
        "auth_hello" => {
            let m = from_slice::<AuthHello>(body)?;
            Message::AuthHello {
                client: m.client,
                nonce: m.nonce,
                key_id: m.key_id,
                early: m.early,
            }
        }
        "auth_challenge" => {
            let m = from_slice::<AuthChallenge>(body)?;
            Message::AuthChallenge {
                server: m.server,
                nonce: m.nonce,
                proof: m.proof,
            }
        }
        "auth_proof" => Message::AuthProof {
            proof: from_slice::<AuthProof>(body)?.proof,
        },
        "welcome" => {
            let m = from_slice::<Welcome>(body)?;
            Message::Welcome {
                server: m.server,
                key: m.key,
                checks: m.checks,
            }
        }
        "check" => Message::Check {
            params: from_slice::<Setup>(body)?.params,
        },
        "checked" => Message::Checked,
        "setup" => Message::Setup {
            params: from_slice::<Setup>(body)?.params,
        },
        "ready" => {
            let m = from_slice::<Ready>(body)?;
            Message::Ready {
                ports: m.ports,
                token: m.token,
            }
        }
        "client_done" => Message::ClientDone,
        "report" => Message::Report {
            report: from_slice::<Report>(body)?.report,
        },
        "error" => Message::Error {
            message: from_slice::<Error>(body)?.message,
        },
        other => return Err(serde_json::Error::unknown_variant(other, TYPES)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out `data`, then ends, noting the largest
    /// buffer it was asked to fill.
    struct Trickle {
        data: std::io::Cursor<Vec<u8>>,
        largest_buffer: usize,
    }

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.largest_buffer = self.largest_buffer.max(buf.len());
            self.data.read(buf)
        }
    }

    /// Found by `proto_fuzz`: a `check` whose only invalid UTF-8 is in a
    /// field the parser skips was taken; serde refuses it, and so must
    /// the parser (a recoverable `Malformed`), while the same message
    /// with that byte valid is still taken.
    #[test]
    fn invalid_utf8_in_an_unknown_field_is_malformed() {
        let good = br#"{"type":"hello","client":"c","x":"kernel"}"#.to_vec();
        assert!(matches!(
            parse_payload(&good),
            Ok(Message::Hello { client }) if client == "c"
        ));
        let mut bad = good.clone();
        let at = bad.windows(6).position(|w| w == b"kernel").unwrap();
        bad[at] = 0x80;
        assert!(serde_json::from_slice::<Message>(&bad).is_err());
        let e = parse_payload(&bad).unwrap_err().to_string();
        assert!(e.contains("must be UTF-8"), "{e}");
        let mut frame = Vec::from(MAGIC);
        frame.extend_from_slice(&VERSION.to_be_bytes());
        frame.extend_from_slice(&(bad.len() as u32).to_be_bytes());
        frame.extend_from_slice(&bad);
        match read_message(&mut frame.as_slice()) {
            Err(e @ FrameError::Malformed(_)) => assert!(e.recoverable(), "{e}"),
            other => panic!("expected a recoverable Malformed, got {other:?}"),
        }
    }

    #[test]
    fn a_declared_megabyte_costs_only_the_bytes_sent() {
        // A frame that declares MAX_FRAME and sends 100 bytes of it.
        let mut data = Vec::from(MAGIC);
        data.extend_from_slice(&VERSION.to_be_bytes());
        data.extend_from_slice(&MAX_FRAME.to_be_bytes());
        data.extend_from_slice(&[b' '; 100]);
        let mut r = Trickle {
            data: std::io::Cursor::new(data),
            largest_buffer: 0,
        };
        match read_message(&mut r) {
            Err(FrameError::Io(e)) => assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof),
            other => panic!("expected a cut frame, got {other:?}"),
        }
        // The old reader allocated (and offered) the whole megabyte at once.
        assert!(r.largest_buffer <= 4096, "{}", r.largest_buffer);
    }

    #[test]
    fn round_trip() {
        let mut buf = Vec::new();
        let m = Message::Ready {
            ports: vec![1, 2],
            token: Some("ab".into()),
        };
        write_message(&mut buf, &m).unwrap();
        assert_eq!(&buf[..4], b"TCPL");
        assert_eq!(read_message(&mut buf.as_slice()).unwrap(), m);
        for m in [
            Message::Welcome {
                server: "s".into(),
                key: Some("client-a".into()),
                checks: true,
            },
            Message::AuthHello {
                client: "c".into(),
                nonce: "00".into(),
                key_id: Some("1c0660cfbe19beff".into()),
                early: Some(crate::early_proof::EarlyProof {
                    time: 1_800_000_000,
                    proof: "ab".repeat(32),
                }),
            },
            Message::Check {
                params: TrialParams::defaults(record::TestKind::TcpRr),
            },
            Message::Checked,
        ] {
            buf.clear();
            write_message(&mut buf, &m).unwrap();
            assert_eq!(read_message(&mut buf.as_slice()).unwrap(), m);
        }
        // An older peer's welcome and auth_hello still parse.
        buf.clear();
        write_frame(&mut buf, VERSION, br#"{"type":"welcome","server":"old"}"#).unwrap();
        assert_eq!(
            read_message(&mut buf.as_slice()).unwrap(),
            Message::Welcome {
                server: "old".into(),
                key: None,
                checks: false
            }
        );
    }

    #[test]
    fn errors_are_classified() {
        let mut buf = Vec::new();
        write_frame(&mut buf, VERSION, b"{\"type\":\"nonsense\"}").unwrap();
        let e = read_message(&mut buf.as_slice()).unwrap_err();
        assert!(e.recoverable(), "{e}");
        buf.clear();
        write_frame(&mut buf, 9, b"{}").unwrap();
        assert!(matches!(
            read_message(&mut buf.as_slice()),
            Err(FrameError::BadVersion(9))
        ));
        assert!(matches!(
            read_message(&mut &b"GET / HTTP/1.1\r\n"[..]),
            Err(FrameError::BadMagic(_))
        ));
        assert!(matches!(
            read_message(&mut &b""[..]),
            Err(FrameError::Closed)
        ));
    }
}
