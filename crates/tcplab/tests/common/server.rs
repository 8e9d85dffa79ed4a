//! A real `tcplab server` child process for the tests that attack or
//! authenticate against one: started on port 0 (optionally inside a
//! namespace), its address read from its first line, killed by its pid
//! when dropped.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

/// A `tcplab server` child, stopped by its pid when dropped.
pub struct ServerChild {
    /// The server process.
    pub child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
}

impl Drop for ServerChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ServerChild {
    /// `[ip netns exec NS] tcplab server --bind IP --port 0 EXTRA…`, once it
    /// says where it listens; its log (stdout) is kept for [`Self::log`].
    pub fn start(netns: Option<&str>, ip: &str, extra: &[&str]) -> ServerChild {
        Self::spawn(netns, ip, extra, Stdio::piped())
    }

    /// The same with its log discarded: for attacks that make the server
    /// log more than a pipe holds while nobody reads it.
    pub fn start_unlogged(netns: Option<&str>, ip: &str, extra: &[&str]) -> ServerChild {
        Self::spawn(netns, ip, extra, Stdio::null())
    }

    fn spawn(netns: Option<&str>, ip: &str, extra: &[&str], log: Stdio) -> ServerChild {
        let bin = assert_cmd::cargo::cargo_bin("tcplab");
        let mut c = match netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        let mut child = c
            .args(["server", "--bind", ip, "--port", "0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let addr = first
            .trim()
            .strip_prefix("tcplab server listening on ")
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("server did not start: {first:?}"));
        ServerChild { child, addr }
    }

    /// Stops the server and returns its log.
    pub fn log(mut self) -> String {
        let _ = self.child.kill();
        let mut text = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        text
    }
}
