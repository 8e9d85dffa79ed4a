//! Pre-shared keys and the control channel's challenge-response.
//!
//! A key is 256 random bits from the operating system, kept as one line of
//! hex in a file only its owner can read (`tcplab key new`). Client and
//! server prove to each other that they hold the same key: the client sends
//! a fresh nonce, the server answers with its own nonce and an HMAC-SHA256
//! over both nonces under the label [`SERVER_LABEL`], the client checks it
//! and answers with an HMAC over the same nonces under [`CLIENT_LABEL`],
//! and the server checks that. Both nonces are new on every connection, so
//! a recorded handshake replayed on another connection fails. Proofs are
//! checked with `Mac::verify_slice`, which compares in constant time.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Bytes in a key and in a nonce.
pub const KEY_BYTES: usize = 32;
/// What the server's proof is computed over, before the nonces.
pub const SERVER_LABEL: &[u8] = b"tcplab control v2: server proof";
/// What the client's proof is computed over, before the nonces.
pub const CLIENT_LABEL: &[u8] = b"tcplab control v2: client proof";

/// What a key's id is hashed over, before the key.
pub const KEY_ID_LABEL: &[u8] = b"tcplab key id v1";

/// Hex digits in a key id.
pub const KEY_ID_HEX: usize = 16;

/// A pre-shared key. Its `Debug` does not show the key.
#[derive(Clone, PartialEq, Eq)]
pub struct Key([u8; KEY_BYTES]);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(..)")
    }
}

/// A nonce: fresh random bytes for one handshake.
pub type Nonce = [u8; KEY_BYTES];

/// Why a key could not be made, written or read.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The operating system's random source failed.
    #[error("no random bytes from the operating system: {0}")]
    Random(String),
    /// The key file already exists; keys are never overwritten.
    #[error("{0}: already exists; a key file is never overwritten")]
    Exists(String),
    /// The key file's permissions let others read it.
    #[error("{path}: readable by group or others (mode {mode:03o}); run chmod 600 {path}")]
    Exposed {
        /// The key file.
        path: String,
        /// Its permission bits.
        mode: u32,
    },
    /// The file holds the all-zero key, which anyone can guess.
    #[error("{0}: the key is all zeros, which anyone can guess; make one with tcplab key new")]
    AllZero(String),
    /// The file does not hold a key.
    #[error("{0}: not a tcplab key (expected one line of 64 hex digits)")]
    Malformed(String),
    /// Creating, writing or reading the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The key file.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// Fresh random bytes from the operating system.
pub fn fresh_nonce() -> Result<Nonce, KeyError> {
    let mut n = [0u8; KEY_BYTES];
    getrandom::fill(&mut n).map_err(|e| KeyError::Random(e.to_string()))?;
    Ok(n)
}

impl Key {
    /// A new random key.
    pub fn generate() -> Result<Key, KeyError> {
        fresh_nonce().map(Key)
    }

    /// The key as its file holds it: 64 hex digits and a newline.
    pub fn to_line(&self) -> String {
        format!("{}\n", hex::encode(self.0))
    }

    /// Parses a key's line (surrounding whitespace ignored).
    pub fn from_line(text: &str) -> Option<Key> {
        let bytes = hex::decode(text.trim()).ok()?;
        bytes.try_into().ok().map(Key)
    }

    /// Writes the key to a new file `path` created with mode 0600; an
    /// existing file is left alone and refused.
    pub fn write_new(&self, path: &Path) -> Result<(), KeyError> {
        let name = path.display().to_string();
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => KeyError::Exists(name.clone()),
                _ => KeyError::Io {
                    path: name.clone(),
                    source: e,
                },
            })?;
        f.write_all(self.to_line().as_bytes())
            .and_then(|()| f.sync_all())
            .map_err(|source| KeyError::Io { path: name, source })
    }

    /// Reads the key in `path`, refusing a file that group or others may read.
    pub fn read_file(path: &Path) -> Result<Key, KeyError> {
        let name = path.display().to_string();
        let io = |source| KeyError::Io {
            path: name.clone(),
            source,
        };
        let mode = std::fs::metadata(path).map_err(io)?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(KeyError::Exposed { path: name, mode });
        }
        let text = std::fs::read_to_string(path).map_err(io)?;
        let key = Key::from_line(&text).ok_or_else(|| KeyError::Malformed(name.clone()))?;
        if key.is_zero() {
            return Err(KeyError::AllZero(name));
        }
        Ok(key)
    }

    /// Whether every byte of the key is zero (refused wherever a key is
    /// read or used: anyone can guess it).
    pub fn is_zero(&self) -> bool {
        self.0.iter().all(|b| *b == 0)
    }

    /// The key's bytes, for deriving a connection's keys.
    pub(crate) fn bytes(&self) -> &[u8; KEY_BYTES] {
        &self.0
    }

    /// The key's id: the first 8 bytes of SHA-256 over [`KEY_ID_LABEL`]
    /// and the key, as 16 hex digits. A client names its key by this id in
    /// its `auth_hello`, so a server with several keys knows which one to
    /// prove; the id says nothing usable about the key itself.
    pub fn id(&self) -> String {
        use sha2::Digest;
        let digest = Sha256::new()
            .chain_update(KEY_ID_LABEL)
            .chain_update(self.0)
            .finalize();
        hex::encode(&digest[..KEY_ID_HEX / 2])
    }

    fn mac(&self, label: &[u8], client: &Nonce, server: &Nonce) -> Hmac<Sha256> {
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&self.0)
            .expect("HMAC accepts a key of any length");
        m.update(label);
        m.update(client);
        m.update(server);
        m
    }

    /// The proof for `label` over the client's and the server's nonces.
    pub fn proof(&self, label: &[u8], client: &Nonce, server: &Nonce) -> [u8; 32] {
        self.mac(label, client, server)
            .finalize()
            .into_bytes()
            .into()
    }

    /// Whether `proof` is this key's proof for `label` over the nonces
    /// (compared in constant time).
    pub fn verify(&self, label: &[u8], client: &Nonce, server: &Nonce, proof: &[u8]) -> bool {
        self.mac(label, client, server).verify_slice(proof).is_ok()
    }
}

/// Hex text of bytes (nonces and proofs travel as hex in JSON).
pub fn to_hex(bytes: &[u8]) -> String {
    hex::encode(bytes)
}

/// A nonce from its hex text, if it is one.
pub fn nonce_from_hex(text: &str) -> Option<Nonce> {
    hex::decode(text).ok()?.try_into().ok()
}

/// Bytes from hex text, if it is hex.
pub fn from_hex(text: &str) -> Option<Vec<u8>> {
    hex::decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proofs_bind_key_label_and_both_nonces() {
        let k = Key::generate().unwrap();
        let other = Key::generate().unwrap();
        let (c, s) = (fresh_nonce().unwrap(), fresh_nonce().unwrap());
        let p = k.proof(SERVER_LABEL, &c, &s);
        assert!(k.verify(SERVER_LABEL, &c, &s, &p));
        assert!(!other.verify(SERVER_LABEL, &c, &s, &p));
        assert!(!k.verify(CLIENT_LABEL, &c, &s, &p));
        assert!(!k.verify(SERVER_LABEL, &s, &c, &p));
        assert!(!k.verify(SERVER_LABEL, &c, &fresh_nonce().unwrap(), &p));
        assert!(!k.verify(SERVER_LABEL, &c, &s, &p[..31]));
    }

    #[test]
    fn key_lines_round_trip_and_keys_differ() {
        let k = Key::generate().unwrap();
        assert_eq!(k.to_line().len(), 65);
        assert_eq!(Key::from_line(&k.to_line()), Some(k.clone()));
        assert_ne!(Key::generate().unwrap(), k);
        assert_eq!(Key::from_line("abc"), None);
        assert_eq!(format!("{k:?}"), "Key(..)");
    }

    #[test]
    fn key_ids_are_short_stable_and_not_the_key() {
        let k = Key::generate().unwrap();
        assert_eq!(k.id().len(), KEY_ID_HEX);
        assert_eq!(k.id(), k.clone().id());
        assert_ne!(k.id(), Key::generate().unwrap().id());
        assert!(!k.to_line().contains(&k.id()));
        // SHA-256("tcplab key id v1" ‖ 32 zero bytes), first 8 bytes
        // (computed apart, with Python's hashlib).
        assert_eq!(Key([0; KEY_BYTES]).id(), "1c0660cfbe19beff");
    }

    #[test]
    fn an_all_zero_key_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zero.key");
        Key([0; KEY_BYTES]).write_new(&path).unwrap();
        let e = Key::read_file(&path).unwrap_err().to_string();
        assert!(
            e.ends_with(
                "the key is all zeros, which anyone can guess; make one with tcplab key new"
            ),
            "{e}"
        );
        assert!(!Key::generate().unwrap().is_zero());
    }
}
