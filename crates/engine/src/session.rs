//! The authenticated control channel after a keyed handshake.
//!
//! The handshake of [`crate::auth`] proves the key both ways, but on its own
//! it authenticates nothing after it: a relay on the path could forward the
//! handshake, drop the client and send its own `setup`s under the victim's
//! key. So every frame after `auth_proof` (the server's `welcome` first)
//! carries a tag:
//!
//! - Two keys, one per direction, are derived with HKDF-SHA256
//!   (RFC 5869): the pre-shared key is the input key material, the client's
//!   and the server's nonces are the salt, and the info is a direction
//!   label followed by the SHA-256 of the handshake's transcript (the
//!   `auth_hello`, `auth_challenge` and `auth_proof` payloads exactly as
//!   sent, each preceded by its length). Only a holder of the key can
//!   compute them, they are new on every connection, and a relay that
//!   altered any handshake byte gets keys the endpoints do not share.
//! - Every frame is `header ‖ payload ‖ tag`, its length field counting
//!   the payload and the [`TAG_BYTES`]-byte tag: HMAC-SHA256 under the
//!   direction's key of the frame's sequence number (a u64 per direction,
//!   from 0, never sent: implicit), its header and its payload. A forged,
//!   altered, replayed, reordered, dropped or cut frame fails its tag, and
//!   a frame that fails its tag ends the connection.
//!
//! Why this and not the Noise framework (`snow` with a PSK): the handshake
//! already is a mutual PSK proof over fresh nonces whose replay,
//! reflection, downgrade and timing resistance were tested; what was missing
//! was binding the frames after it to that handshake, which HKDF and HMAC
//! (RustCrypto, the crates the handshake already uses) do in a hundred
//! lines. Noise would replace the handshake and its tests, add a cipher
//! suite the threat does not need (the control channel is not secret: the
//! data plane stays plaintext anyway, and the trial's token is only a
//! capability bound to the data connections' source address), and cap a
//! message at 65,535 bytes where a report may take a megabyte. Servers
//! without keys keep plain frames.

use crate::auth::{Key, Nonce};
use crate::proto::{
    header, parse_body, read_frame, FrameError, Message, HEADER_BYTES, MAX_FRAME, VERSION,
};
use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};

/// Bytes of the tag after each authenticated frame's payload.
pub const TAG_BYTES: usize = 32;

/// HKDF info of the client-to-server key, before the transcript's hash.
const CLIENT_TO_SERVER: &[u8] = b"tcplab control v3: client to server";
/// HKDF info of the server-to-client key, before the transcript's hash.
const SERVER_TO_CLIENT: &[u8] = b"tcplab control v3: server to client";
/// What the transcript's hash starts with.
const TRANSCRIPT_LABEL: &[u8] = b"tcplab control v3 transcript";

/// The handshake's payloads, hashed as they are sent and received.
#[derive(Clone)]
pub struct Transcript(Sha256);

impl Default for Transcript {
    fn default() -> Transcript {
        Transcript(Sha256::new().chain_update(TRANSCRIPT_LABEL))
    }
}

impl Transcript {
    /// Adds one handshake payload.
    pub fn add(&mut self, payload: &[u8]) {
        self.0.update((payload.len() as u64).to_be_bytes());
        self.0.update(payload);
    }

    /// The hash of everything added.
    pub fn hash(&self) -> [u8; 32] {
        self.0.clone().finalize().into()
    }
}

/// The per-direction keys of one connection.
#[derive(Clone)]
pub struct SessionKeys {
    client_to_server: [u8; 32],
    server_to_client: [u8; 32],
}

impl SessionKeys {
    /// The keys of a handshake under `key` with these nonces and transcript.
    pub fn derive(key: &Key, client: &Nonce, server: &Nonce, transcript: &[u8; 32]) -> SessionKeys {
        let mut salt = [0u8; 64];
        salt[..32].copy_from_slice(client);
        salt[32..].copy_from_slice(server);
        let hk = Hkdf::<Sha256>::new(Some(&salt), key.bytes());
        let expand = |label: &[u8]| {
            let mut out = [0u8; 32];
            hk.expand_multi_info(&[label, transcript], &mut out)
                .expect("32 bytes is a valid HKDF-SHA256 length");
            out
        };
        SessionKeys {
            client_to_server: expand(CLIENT_TO_SERVER),
            server_to_client: expand(SERVER_TO_CLIENT),
        }
    }
}

/// Which end of the connection this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// `bench`.
    Client,
    /// `tcplab server`.
    Server,
}

/// One direction's key and next sequence number.
#[derive(Clone)]
struct Direction {
    key: [u8; 32],
    seq: u64,
}

impl Direction {
    fn tag(&self, head: &[u8], payload: &[u8]) -> Hmac<Sha256> {
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&self.key)
            .expect("HMAC accepts a key of any length");
        m.update(&self.seq.to_be_bytes());
        m.update(head);
        m.update(payload);
        m
    }
}

/// How one connection's frames are written and read: plain (a server
/// without keys, and every handshake) or tagged.
#[derive(Clone, Default)]
pub struct Framing {
    sealed: Option<(Direction, Direction)>,
}

impl Framing {
    /// Plain frames.
    pub fn plain() -> Framing {
        Framing::default()
    }

    /// Tagged frames under `keys`, as seen from `side`.
    pub fn sealed(keys: &SessionKeys, side: Side) -> Framing {
        let (send, recv) = match side {
            Side::Client => (keys.client_to_server, keys.server_to_client),
            Side::Server => (keys.server_to_client, keys.client_to_server),
        };
        Framing {
            sealed: Some((
                Direction { key: send, seq: 0 },
                Direction { key: recv, seq: 0 },
            )),
        }
    }

    /// Whether frames carry tags.
    pub fn is_sealed(&self) -> bool {
        self.sealed.is_some()
    }

    /// The frame of `m` as it goes on the wire (its tag, if sealed,
    /// counted in the send sequence).
    pub fn seal(&mut self, m: &Message) -> std::io::Result<Vec<u8>> {
        let payload = crate::proto::encode_body(m)?;
        Ok(self.seal_payload(&payload))
    }

    /// The frame of a raw payload (tests send malformed ones).
    pub fn seal_payload(&mut self, payload: &[u8]) -> Vec<u8> {
        let mut frame = Vec::with_capacity(HEADER_BYTES + payload.len() + TAG_BYTES);
        match &mut self.sealed {
            None => {
                frame.extend_from_slice(&header(VERSION, payload.len()));
                frame.extend_from_slice(payload);
            }
            Some((send, _)) => {
                let head = header(VERSION, payload.len() + TAG_BYTES);
                let tag = send.tag(&head, payload).finalize().into_bytes();
                send.seq += 1;
                frame.extend_from_slice(&head);
                frame.extend_from_slice(payload);
                frame.extend_from_slice(&tag);
            }
        }
        frame
    }

    /// Writes `m` as one frame.
    pub fn write<W: Write>(&mut self, w: &mut W, m: &Message) -> std::io::Result<()> {
        let frame = self.seal(m)?;
        w.write_all(&frame)?;
        w.flush()
    }

    /// Reads one frame and its message. A frame that fails its tag is
    /// [`FrameError::BadTag`] (not recoverable: the caller ends the
    /// connection); a payload that does not parse under a good tag is a
    /// recoverable `Malformed`, its sequence number used.
    pub fn read<R: Read>(&mut self, r: &mut R) -> Result<Message, FrameError> {
        let max = if self.sealed.is_some() {
            MAX_FRAME + TAG_BYTES as u32
        } else {
            MAX_FRAME
        };
        let (version, mut body) = read_frame(r, max)?;
        if version != VERSION {
            return Err(FrameError::BadVersion(version));
        }
        if let Some((_, recv)) = &mut self.sealed {
            if body.len() < TAG_BYTES {
                return Err(FrameError::BadTag);
            }
            let tag = body.split_off(body.len() - TAG_BYTES);
            let head = header(version, body.len() + TAG_BYTES);
            recv.tag(&head, &body)
                .verify_slice(&tag)
                .map_err(|_| FrameError::BadTag)?;
            recv.seq += 1;
        }
        parse_body(&body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::fresh_nonce;

    fn pair() -> (Framing, Framing) {
        let k = Key::generate().unwrap();
        let (c, s) = (fresh_nonce().unwrap(), fresh_nonce().unwrap());
        let mut t = Transcript::default();
        t.add(b"hello");
        let keys = SessionKeys::derive(&k, &c, &s, &t.hash());
        (
            Framing::sealed(&keys, Side::Client),
            Framing::sealed(&keys, Side::Server),
        )
    }

    #[test]
    fn tagged_frames_pass_in_order_and_fail_out_of_it() {
        let (mut client, mut server) = pair();
        let a = client.seal(&Message::ClientDone).unwrap();
        let b = client.seal(&Message::Checked).unwrap();
        assert_eq!(server.read(&mut a.as_slice()).unwrap(), Message::ClientDone);
        // Replayed.
        assert!(matches!(
            server.clone().read(&mut a.as_slice()),
            Err(FrameError::BadTag)
        ));
        assert_eq!(server.read(&mut b.as_slice()).unwrap(), Message::Checked);
        // A frame the server itself sent (reflected) fails.
        let mut reflected = server.seal(&Message::ClientDone).unwrap();
        assert!(matches!(
            server.clone().read(&mut reflected.as_slice()),
            Err(FrameError::BadTag)
        ));
        // A flipped payload bit fails.
        let mut c2 = client.clone();
        let mut f = c2.seal(&Message::ClientDone).unwrap();
        f[HEADER_BYTES + 2] ^= 1;
        assert!(matches!(
            server.clone().read(&mut f.as_slice()),
            Err(FrameError::BadTag)
        ));
        reflected.truncate(HEADER_BYTES);
        assert!(server.clone().read(&mut reflected.as_slice()).is_err());
    }

    #[test]
    fn keys_differ_by_transcript_and_direction() {
        let k = Key::generate().unwrap();
        let (c, s) = (fresh_nonce().unwrap(), fresh_nonce().unwrap());
        let a = SessionKeys::derive(&k, &c, &s, &[0; 32]);
        let b = SessionKeys::derive(&k, &c, &s, &[1; 32]);
        assert_ne!(a.client_to_server, b.client_to_server);
        assert_ne!(a.client_to_server, a.server_to_client);
    }
}
