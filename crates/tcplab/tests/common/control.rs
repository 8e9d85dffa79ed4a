//! The client's side of a keyed handshake done by hand (as bench does it),
//! for tests that then send their own frames on the authenticated
//! connection: every byte sent is kept, and the connection's tagged
//! framing ([`engine::session`]) is returned with it.

use engine::auth::{fresh_nonce, nonce_from_hex, to_hex, Key, CLIENT_LABEL, SERVER_LABEL};
use engine::early_proof::{unix_now, EarlyProof};
use engine::proto::{
    encode_body, parse_body, read_frame, write_frame, FrameError, Message, MAX_FRAME, VERSION,
};
use engine::session::{Framing, SessionKeys, Side, Transcript};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// An authenticated control connection made by hand.
pub struct Keyed {
    /// The connection.
    pub stream: TcpStream,
    /// Its tagged framing after the handshake.
    pub framing: Framing,
    /// Every byte the client sent in the handshake.
    pub sent: Vec<u8>,
    /// The server's answer to `auth_proof` (a tagged `welcome`, or a
    /// plain `error`).
    pub answer: Message,
}

impl Keyed {
    /// Sends `m`, tagged.
    pub fn send(&mut self, m: &Message) -> std::io::Result<()> {
        self.framing.write(&mut self.stream, m)
    }

    /// Reads one tagged message.
    pub fn recv(&mut self) -> Result<Message, FrameError> {
        self.framing.read(&mut self.stream)
    }
}

/// The client's handshake with `key` to `addr`, naming itself `client`.
pub fn keyed_handshake(addr: SocketAddr, key: &Key, client: &str) -> Keyed {
    keyed_handshake_as(addr, key, client, true).unwrap_or_else(|e| panic!("{e}"))
}

/// The same, with or without the early proof in `auth_hello` (without:
/// as a client older than the proof); why it failed if the server did not
/// answer with a challenge, or its proof did not check.
pub fn keyed_handshake_as(
    addr: SocketAddr,
    key: &Key,
    client: &str,
    early: bool,
) -> Result<Keyed, String> {
    let e = |what: &'static str| move |err: FrameError| format!("{what}: {err}");
    let mut s = TcpStream::connect(addr).map_err(|err| format!("connecting: {err}"))?;
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut sent = Vec::new();
    let mut t = Transcript::default();
    let ours = fresh_nonce().unwrap();
    let hello = encode_body(&Message::AuthHello {
        client: client.into(),
        nonce: to_hex(&ours),
        key_id: Some(key.id()),
        early: early.then(|| EarlyProof::new(key, &ours, unix_now())),
    })
    .unwrap();
    t.add(&hello);
    write_frame(&mut sent, VERSION, &hello).unwrap();
    std::io::Write::write_all(&mut s, &sent).map_err(|err| format!("sending: {err}"))?;
    let (_, body) = read_frame(&mut s, MAX_FRAME).map_err(e("reading the challenge"))?;
    let Ok(Message::AuthChallenge { nonce, proof, .. }) = parse_body(&body) else {
        return Err(format!(
            "no challenge: {:?}",
            String::from_utf8_lossy(&body)
        ));
    };
    t.add(&body);
    let theirs = nonce_from_hex(&nonce).unwrap();
    let proof = engine::auth::from_hex(&proof).unwrap();
    assert!(key.verify(SERVER_LABEL, &ours, &theirs, &proof));
    let proof = encode_body(&Message::AuthProof {
        proof: to_hex(&key.proof(CLIENT_LABEL, &ours, &theirs)),
    })
    .unwrap();
    t.add(&proof);
    let start = sent.len();
    write_frame(&mut sent, VERSION, &proof).unwrap();
    std::io::Write::write_all(&mut s, &sent[start..])
        .map_err(|err| format!("sending the proof: {err}"))?;
    let keys = SessionKeys::derive(key, &ours, &theirs, &t.hash());
    let mut framing = Framing::sealed(&keys, Side::Client);
    let (_, body) = read_frame(&mut s, MAX_FRAME + 64).map_err(e("reading the answer"))?;
    let mut frame = engine::proto::header(VERSION, body.len()).to_vec();
    frame.extend_from_slice(&body);
    let answer = match framing.read(&mut frame.as_slice()) {
        Ok(m) => m,
        Err(FrameError::BadTag) => {
            parse_body(&body).map_err(|err| format!("answering auth_proof: {err}"))?
        }
        Err(err) => return Err(format!("answering auth_proof: {err}")),
    };
    Ok(Keyed {
        stream: s,
        framing,
        sent,
        answer,
    })
}
