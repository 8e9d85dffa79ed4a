//! `tcplab server --keys FILE.toml`: several keys, each with its own limits
//! (README: "Keys with their own limits"). Each `[[key]]` entry names a key
//! file (from `tcplab key new`, relative to the TOML file) and optionally
//! `name`, `max_rate`, `max_duration`, `max_bytes`, `max_parallel`, `tests`,
//! `reverse`, `max_clients`, `max_trials` and `max_cpu` (CPU-seconds per
//! second of one trial on the server). A bad value is one line naming the entry and the field.

use engine::{Key, KeyPolicy, KeyRing, Limits};
use record::factor::parse;
use record::TestKind;
use std::path::{Path, PathBuf};
use toml::{Table, Value};

/// The fields a `[[key]]` entry may have.
const FIELDS: &[&str] = &[
    "file",
    "name",
    "max_rate",
    "max_duration",
    "max_bytes",
    "max_parallel",
    "tests",
    "reverse",
    "max_clients",
    "max_trials",
    "max_cpu",
];

/// One `[[key]]` entry: its key file (as written) and its limits.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyEntry {
    /// The key file, relative to the TOML file's directory unless absolute.
    pub file: PathBuf,
    /// The key's limits (and name).
    pub policy: KeyPolicy,
}

/// Reads `--keys FILE`: every entry's key file and limits, checked against
/// the server's `limits` (a key may only tighten them). The error is one
/// line, ready for `usage`.
pub fn read_keys(path: &Path, limits: &Limits) -> Result<KeyRing, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("--keys {shown}: {e}"))?;
    let entries = parse_entries(&text, limits).map_err(|e| format!("--keys {shown}: {e}"))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut ring: KeyRing = Vec::new();
    for (i, e) in entries.into_iter().enumerate() {
        let file = dir.join(&e.file);
        let key = Key::read_file(&file).map_err(|err| {
            format!(
                "--keys {shown}: key entry {} ({:?}): {err}",
                i + 1,
                e.policy.name
            )
        })?;
        if let Some((_, other)) = ring.iter().find(|(k, _)| *k == key) {
            return Err(format!(
                "--keys {shown}: key entry {} ({:?}): the same key as {:?}",
                i + 1,
                e.policy.name,
                other.name
            ));
        }
        ring.push((key, e.policy));
    }
    Ok(ring)
}

/// Parses the TOML text of a keys file into its entries, checking each
/// value and that no entry loosens the server's `limits`.
pub fn parse_entries(text: &str, limits: &Limits) -> Result<Vec<KeyEntry>, String> {
    let table: Table = text.parse().map_err(|e: toml::de::Error| {
        format!("not valid TOML: {}", e.message().replace('\n', " "))
    })?;
    if let Some(other) = table.keys().find(|k| *k != "key") {
        return Err(format!(
            "unknown table {other:?}: a keys file holds only [[key]] entries"
        ));
    }
    let list = match table.get("key") {
        Some(Value::Array(list)) if !list.is_empty() => list,
        _ => return Err("no [[key]] entries".into()),
    };
    let mut entries: Vec<KeyEntry> = Vec::new();
    for (i, v) in list.iter().enumerate() {
        let Value::Table(t) = v else {
            return Err(format!("key entry {} is not a table", i + 1));
        };
        let e = entry(t, limits).map_err(|(name, why)| match name {
            Some(n) => format!("key entry {} ({n:?}): {why}", i + 1),
            None => format!("key entry {}: {why}", i + 1),
        })?;
        if entries.iter().any(|o| o.policy.name == e.policy.name) {
            return Err(format!(
                "key entry {} ({:?}): another entry has the same name",
                i + 1,
                e.policy.name
            ));
        }
        entries.push(e);
    }
    Ok(entries)
}

/// One entry, or its name (if known) and what is wrong.
fn entry(t: &Table, limits: &Limits) -> Result<KeyEntry, (Option<String>, String)> {
    let file = match t.get("file") {
        Some(Value::String(f)) if !f.is_empty() => PathBuf::from(f),
        Some(_) => return Err((None, "file must be a path (a string)".into())),
        None => return Err((None, "file is missing (the key file)".into())),
    };
    let name = match t.get("name") {
        None => file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        Some(Value::String(n)) if !n.is_empty() => n.clone(),
        Some(_) => return Err((None, "name must be a non-empty string".into())),
    };
    let fail = |why: String| (Some(name.clone()), why);
    if let Some(k) = t.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(fail(format!(
            "unknown field {k:?} (known: {})",
            FIELDS.join(", ")
        )));
    }
    let text = |field: &str,
                f: &dyn Fn(&str) -> Result<u64, String>|
     -> Result<Option<u64>, (Option<String>, String)> {
        match t.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => f(s)
                .map(Some)
                .map_err(|e| fail(format!("{field} {s:?}: {e}"))),
            Some(Value::Integer(n)) if *n > 0 => Ok(Some(*n as u64)),
            Some(other) => Err(fail(format!(
                "{field} {}: expected a positive number or a string such as the README shows",
                shown(other)
            ))),
        }
    };
    let max_rate_bps = text("max_rate", &|s| parse::rate(s).map_err(|e| e.to_string()))?;
    let max_duration_ms = text("max_duration", &|s| {
        parse::duration(s)
            .map(|d| d.as_millis() as u64)
            .map_err(|e| e.to_string())
    })?;
    // A bare number of seconds, as written: `max_duration = 60`.
    let max_duration_s = match t.get("max_duration") {
        Some(Value::Integer(n)) => Some(*n as f64),
        _ => max_duration_ms.map(|ms| ms as f64 / 1000.0),
    };
    let max_bytes = text("max_bytes", &|s| {
        parse::positive_size(s).map_err(|e| e.to_string())
    })?;
    let max_parallel = match t.get("max_parallel") {
        None => None,
        Some(Value::Integer(n)) if (1..=i64::from(u32::MAX)).contains(n) => Some(*n as u32),
        Some(other) => {
            return Err(fail(format!(
                "max_parallel {}: expected a whole number of flows, at least 1",
                shown(other)
            )))
        }
    };
    let tests = match t.get("tests") {
        None => None,
        Some(Value::Array(list)) => Some(test_list(list).map_err(fail)?),
        Some(other) => {
            return Err(fail(format!(
                "tests {}: expected a list such as [\"tcp-stream\", \"tcp-rr\"]",
                shown(other)
            )))
        }
    };
    let reverse = match t.get("reverse") {
        None => true,
        Some(Value::Boolean(b)) => *b,
        Some(other) => {
            return Err(fail(format!(
                "reverse {}: expected true or false",
                shown(other)
            )))
        }
    };
    let count = |field: &str| match t.get(field) {
        None => Ok(None),
        Some(Value::Integer(n)) if *n >= 1 => Ok(Some(*n as usize)),
        Some(other) => Err(fail(format!(
            "{field} {}: expected a whole number, at least 1",
            shown(other)
        ))),
    };
    let max_clients = count("max_clients")?;
    let max_trials = count("max_trials")?;
    let max_cpu = match t.get("max_cpu") {
        None => None,
        Some(Value::Float(f)) if *f > 0.0 => Some(*f),
        Some(Value::Integer(n)) if *n > 0 => Some(*n as f64),
        Some(other) => {
            return Err(fail(format!(
                "max_cpu {}: expected CPU-seconds per second, over 0 (such as 0.5)",
                shown(other)
            )))
        }
    };
    let policy = KeyPolicy {
        max_clients,
        max_trials,
        max_cpu,
        name: name.clone(),
        max_rate_bps,
        max_duration_s,
        max_bytes,
        max_parallel,
        tests,
        reverse,
    };
    policy.within(limits).map_err(fail)?;
    Ok(KeyEntry { file, policy })
}

/// A TOML value as written: strings quoted, numbers and booleans bare.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Integer(n) => n.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Boolean(b) => b.to_string(),
        other => format!("(a {})", other.type_str()),
    }
}

fn test_list(list: &[Value]) -> Result<Vec<TestKind>, String> {
    let names: Vec<&str> = TestKind::ALL.iter().map(|t| t.name()).collect();
    list.iter()
        .map(|v| {
            let s = v.as_str().unwrap_or_default();
            TestKind::ALL
                .into_iter()
                .find(|t| t.name() == s)
                .ok_or_else(|| format!("tests: {} is not a test ({})", shown(v), names.join(", ")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Vec<KeyEntry>, String> {
        parse_entries(text, &Limits::default())
    }

    #[test]
    fn a_full_entry_and_a_bare_one_parse() {
        let e = parsed(
            r#"
[[key]]
file = "client-a.key"
max_rate = "1gbit"
max_duration = "60s"
max_bytes = "10G"
max_parallel = 8
tests = ["tcp-stream", "tcp-rr"]
reverse = false

[[key]]
file = "/etc/tcplab/b.key"
name = "lab"
max_duration = 5
"#,
        )
        .unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].file, PathBuf::from("client-a.key"));
        let a = &e[0].policy;
        assert_eq!(a.name, "client-a");
        assert_eq!(a.max_rate_bps, Some(1_000_000_000));
        assert_eq!(a.max_duration_s, Some(60.0));
        assert_eq!(a.max_bytes, Some(10 << 30));
        assert_eq!(a.max_parallel, Some(8));
        assert_eq!(a.tests, Some(vec![TestKind::TcpStream, TestKind::TcpRr]));
        assert!(!a.reverse);
        let b = &e[1].policy;
        assert_eq!(
            *b,
            KeyPolicy {
                max_duration_s: Some(5.0),
                ..KeyPolicy::unlimited("lab")
            }
        );
    }

    #[test]
    fn bad_values_name_the_entry_and_the_field_in_one_line() {
        let cases = [
            (
                "[[key]]\nfile = \"a.key\"\nmax_rate = \"fast\"",
                "key entry 1 (\"a\"): max_rate \"fast\": ",
            ),
            (
                "[[key]]\nfile = \"a.key\"\n[[key]]\nfile = \"b.key\"\nmax_parallel = 0",
                "key entry 2 (\"b\"): max_parallel 0: expected a whole number of flows, at least 1",
            ),
            (
                "[[key]]\nfile = \"a.key\"\nmax_parallel = 500",
                "key entry 1 (\"a\"): max_parallel 500 must be 1..=128 (the server's limit)",
            ),
            (
                "[[key]]\nfile = \"a.key\"\ntests = [\"tcp-strem\"]",
                "key entry 1 (\"a\"): tests: \"tcp-strem\" is not a test (tcp-stream, udp-stream, tcp-rr, tcp-crr, http, layer-rate)",
            ),
            (
                "[[key]]\nfile = \"a.key\"\nreverse = \"no\"",
                "key entry 1 (\"a\"): reverse \"no\": expected true or false",
            ),
            (
                "[[key]]\nfile = \"a.key\"\nmax_rates = \"1gbit\"",
                "key entry 1 (\"a\"): unknown field \"max_rates\"",
            ),
            (
                "[[key]]\nmax_rate = \"1gbit\"",
                "key entry 1: file is missing (the key file)",
            ),
            (
                "[[key]]\nfile = \"a.key\"\nmax_duration = \"2h\"",
                "key entry 1 (\"a\"): max_duration 7200 s must be over 0 and at most the server's 3600 s",
            ),
            (
                "[[key]]\nfile = \"a.key\"\n[[key]]\nfile = \"x/a.key\"",
                "key entry 2 (\"a\"): another entry has the same name",
            ),
            ("[server]\nport = 1", "unknown table \"server\""),
            ("", "no [[key]] entries"),
            ("[[key]\nfile=", "not valid TOML: "),
        ];
        for (text, want) in cases {
            let e = parsed(text).unwrap_err();
            assert!(e.starts_with(want), "{text:?}: got {e:?}, want {want:?}…");
            assert!(!e.contains('\n'), "{e:?}");
        }
    }

    #[test]
    fn key_files_are_read_beside_the_toml_and_a_key_listed_twice_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let key = Key::generate().unwrap();
        key.write_new(&dir.path().join("a.key")).unwrap();
        let path = dir.path().join("keys.toml");
        std::fs::write(&path, "[[key]]\nfile = \"a.key\"\nmax_parallel = 2\n").unwrap();
        let ring = read_keys(&path, &Limits::default()).unwrap();
        assert_eq!(ring[0].0, key);
        assert_eq!(ring[0].1.max_parallel, Some(2));
        std::fs::write(
            &path,
            "[[key]]\nfile = \"a.key\"\n[[key]]\nfile = \"a.key\"\nname = \"again\"\n",
        )
        .unwrap();
        let e = read_keys(&path, &Limits::default()).unwrap_err();
        assert!(
            e.ends_with("key entry 2 (\"again\"): the same key as \"a\""),
            "{e}"
        );
        std::fs::write(&path, "[[key]]\nfile = \"missing.key\"\n").unwrap();
        let e = read_keys(&path, &Limits::default()).unwrap_err();
        assert!(e.contains("key entry 1 (\"missing\"): "), "{e}");
    }

    #[test]
    fn a_keys_share_of_the_server_parses_and_is_checked() {
        let e =
            parsed("[[key]]\nfile = \"a.key\"\nmax_clients = 4\nmax_trials = 2\nmax_cpu = 0.5\n")
                .unwrap();
        let k = &e[0].policy;
        assert_eq!(
            (k.max_clients, k.max_trials, k.max_cpu),
            (Some(4), Some(2), Some(0.5))
        );
        let cases = [
            (
                "[[key]]\nfile = \"a.key\"\nmax_clients = 0",
                "key entry 1 (\"a\"): max_clients 0: expected a whole number, at least 1",
            ),
            (
                "[[key]]\nfile = \"a.key\"\nmax_trials = 33",
                "key entry 1 (\"a\"): max_trials 33 must be 1..=32 (the server's --max-clients)",
            ),
            (
                "[[key]]\nfile = \"a.key\"\nmax_cpu = \"lots\"",
                "key entry 1 (\"a\"): max_cpu \"lots\": expected CPU-seconds per second, over 0 (such as 0.5)",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parsed(text).unwrap_err(), want, "{text:?}");
        }
    }
}
