//! The TCP sockets of one interface: listeners, connections and the
//! demultiplexing between them.
//!
//! A segment for us is parsed (checksum with the IPv4 pseudo-header, by
//! the interface's [`ChecksumMethod`]) and looked up by its 4-tuple; a
//! connection takes it. Otherwise a listener on its port makes a new
//! [`Connection`] in LISTEN for that 4-tuple (a listening `Connection` is
//! per 4-tuple) as long as fewer than `backlog` wait for `accept`; anything
//! else is answered with RFC 9293 §3.10.7.1's RST. What connections want
//! to send is queued and leaves through [`Interface::send_ip_from`] at
//! [`TcpSockets::flush`].

use super::demux::{Demux, PcbLookupKind};
use super::error::TcpSocketError;
use super::timer_queue::TimerQueue;
use crate::iface::icmp_error::{IcmpError, UnreachableCode};
use crate::iface::{Delivery, IpHandler};
use crate::tcp::input::reset_for;
use crate::tcp::isn::{FourTuple, IsnGenerator};
use crate::tcp::state::State;
use crate::tcp::tcb::{Connection, Segment, TcpConfig};
use crate::time::Instant;
use crate::wire::{ChecksumMethod, Ipv4Repr, TcpPacket, TcpRepr, UdpRepr};
use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};

/// How long a TIME-WAIT connection must have waited before an active open
/// may take its tuple over (Linux's one second).
const TIME_WAIT_REUSE_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// The first ephemeral port (IANA's dynamic range, RFC 6335 §6).
pub const EPHEMERAL_FIRST: u16 = 49152;

/// Names one socket (listener or connection) of a [`TcpSockets`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TcpHandle(usize);

/// What the socket layer counts, beside each connection's own counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpSocketsCounters {
    /// Segments that failed to parse or whose checksum was wrong.
    pub malformed: u64,
    /// Segments for no socket (each answered with a RST unless a RST).
    pub no_socket: u64,
    /// SYNs dropped because the listener's backlog was full.
    pub backlog_drops: u64,
    /// Connections made by listeners.
    pub passive_opens: u64,
    /// Connections opened by `connect`.
    pub active_opens: u64,
    /// Segments sent.
    pub segments_out: u64,
    /// ICMP destination unreachables taken by a connection (soft errors).
    pub icmp_soft_errors: u64,
    /// ICMP errors for no connection, or quoting nothing in flight.
    pub icmp_ignored: u64,
    /// Path MTU reductions (RFC 1191) applied to a connection.
    pub pmtu_reductions: u64,
    /// Connections whose timers ran or whose output was collected by
    /// [`TcpSockets::on_timers`]: with the timer queue, the due and the
    /// dirty ones only, never every idle connection.
    pub timer_visits: u64,
    /// TIME-WAIT connections whose 4-tuple an active open took over
    /// (`TcpConfig::time_wait_reuse`).
    pub time_wait_reused: u64,
    /// TIME-WAIT connections a new SYN ended for a listener (RFC 6191).
    pub time_wait_recycled: u64,
    /// `--pcb-lookup list`: lookups the one-entry cache answered.
    pub pcb_cache_hits: u64,
    /// `--pcb-lookup list`: lookups that walked the PCB list.
    pub pcb_cache_misses: u64,
    /// `--pcb-lookup list`: PCBs the walks compared.
    pub pcb_walked: u64,
    /// `--route-cache on`: segments sent on the connection's cached route
    /// (counted from the last [`TcpSockets::set_route_cache`]).
    pub route_cache_hits: u64,
    /// `--route-cache on`: segments whose connection had no valid cached
    /// route (none yet, or the table changed), which looked it up.
    pub route_cache_misses: u64,
}

#[derive(Debug)]
struct Listener {
    port: u16,
    backlog: usize,
    config: TcpConfig,
    /// Connections made from SYNs and not yet accepted, oldest first.
    pending: VecDeque<usize>,
}

#[derive(Debug)]
struct Socket {
    conn: Connection,
    /// The listener it waits in until accepted.
    listener: Option<usize>,
    /// The application let go of it: it is removed once CLOSED.
    released: bool,
    /// An application call may have made something to send (the socket
    /// is then in the set's dirty list).
    dirty: bool,
    /// The deadline the timer queue holds for it: its connection's
    /// `poll_at` when last looked at.
    scheduled: Option<Instant>,
    /// The last ICMP error it took (RFC 1122 §4.2.3.9's soft error).
    soft_error: Option<UnreachableCode>,
    /// Its last pure ACK as sent, for the next to patch (`--checksum
    /// incremental`; see `tcp_ack_template.rs`).
    ack_template: Option<ack_template::AckTemplate>,
    /// Its cached route (`--route-cache on`; BSD's `inp_route`).
    route: Option<crate::iface::route::cache::CachedRoute>,
}

#[derive(Debug)]
enum Entry {
    Listener(Box<Listener>),
    Socket(Box<Socket>),
}

/// The TCP sockets of one interface.
#[derive(Debug)]
pub struct TcpSockets {
    entries: Vec<Option<Entry>>,
    /// Indices of empty `entries` slots, for reuse.
    free: Vec<usize>,
    /// Sockets an application call marked dirty, for the next `on_timers`.
    dirty: Vec<usize>,
    /// Each connection's earliest deadline, earliest first.
    timers: TimerQueue,
    by_tuple: Demux,
    /// Whether a connection caches its route (`--route-cache`).
    route_cache: bool,
    listeners: HashMap<u16, usize>,
    isn: IsnGenerator,
    checksum: ChecksumMethod,
    config: TcpConfig,
    next_ephemeral: u16,
    outbox: Vec<(FourTuple, Segment)>,
    counters: TcpSocketsCounters,
    /// The largest super-segment payload the device cuts (0: no TSO).
    super_segment_limit: usize,
    ack_per_batch: bool,
    scratch: Vec<Segment>,
    /// The sockets one `on_timers` visits (kept for its capacity).
    visit: Vec<usize>,
    /// Payload buffers of segments sent, lent to the connection that
    /// sends next (at most [`flush::PAYLOAD_POOL`], each of at most
    /// [`flush::POOLED_PAYLOAD`] bytes).
    payload_pool: Vec<Vec<u8>>,
}

impl TcpSockets {
    /// No sockets yet. Connections are built with `config` (a listener
    /// may have its own), ISNs come from `isn`, checksums are computed and
    /// verified by `checksum` (the interface's method).
    pub fn new(config: TcpConfig, isn: IsnGenerator, checksum: ChecksumMethod) -> TcpSockets {
        TcpSockets {
            entries: Vec::new(),
            free: Vec::new(),
            dirty: Vec::new(),
            timers: TimerQueue::default(),
            by_tuple: Demux::default(),
            route_cache: false,
            listeners: HashMap::new(),
            isn,
            checksum,
            config,
            next_ephemeral: EPHEMERAL_FIRST,
            outbox: Vec::new(),
            counters: TcpSocketsCounters::default(),
            super_segment_limit: 0,
            ack_per_batch: true,
            scratch: Vec::new(),
            visit: Vec::new(),
            payload_pool: Vec::new(),
        }
    }

    /// The device cuts TCP super-packets (TSO) with payloads up to
    /// `limit` bytes: connections made from now on may send segments that
    /// large (bounded by their config's `max_super_segment`); 0 (the
    /// default) keeps every segment within one MSS.
    pub fn set_super_segment_limit(&mut self, limit: usize) {
        self.super_segment_limit = limit;
    }

    /// Whether in-order segments read in one batch are answered by one
    /// ACK after the batch ([`Connection::on_segment_in_batch`], on by
    /// default) or each as it arrives (`on_segment`). A switch for
    /// issue 19: one write to the device per batch instead of one per two
    /// segments is most of the receiver's cost on a TUN.
    pub fn set_ack_per_batch(&mut self, on: bool) {
        self.ack_per_batch = on;
    }

    /// How incoming segments find their connection (`--pcb-lookup`; the
    /// hash by default). The PCB counters count from here.
    pub fn set_pcb_lookup(&mut self, kind: PcbLookupKind) {
        let listeners: Vec<(u16, usize)> = self.listeners.iter().map(|(&p, &i)| (p, i)).collect();
        self.by_tuple.set_kind(kind, &listeners);
    }

    /// Whether each connection caches its route (`--route-cache`, BSD's
    /// `inp_route`; off by default: a route lookup per segment sent).
    pub fn set_route_cache(&mut self, on: bool) {
        self.route_cache = on;
        self.counters.route_cache_hits = 0;
        self.counters.route_cache_misses = 0;
    }

    /// The counters so far.
    pub fn counters(&self) -> TcpSocketsCounters {
        let list = self.by_tuple.list_counters();
        TcpSocketsCounters {
            pcb_cache_hits: list.cache_hits,
            pcb_cache_misses: list.cache_misses,
            pcb_walked: list.walked,
            ..self.counters
        }
    }

    fn insert(&mut self, entry: Entry) -> usize {
        match self.free.pop() {
            Some(i) => {
                self.entries[i] = Some(entry);
                i
            }
            None => {
                self.entries.push(Some(entry));
                self.entries.len() - 1
            }
        }
    }

    /// Empties slot `index` for reuse.
    fn remove_entry(&mut self, index: usize) {
        if self.entries[index].take().is_some() {
            self.free.push(index);
        }
    }

    /// Queues socket `index` for output at the next `on_timers`.
    fn mark_dirty(&mut self, index: usize) {
        if let Some(Some(Entry::Socket(s))) = self.entries.get_mut(index) {
            if !s.dirty {
                s.dirty = true;
                self.dirty.push(index);
            }
        }
    }

    /// Whether the queue entry (`at`, `index`) is the socket's current
    /// deadline (otherwise it is stale).
    fn is_current(&self, at: Instant, index: usize) -> bool {
        matches!(self.entries.get(index), Some(Some(Entry::Socket(s))) if s.scheduled == Some(at))
    }

    /// Drops stale entries from the top, so [`TcpSockets::poll_at`] can
    /// read the earliest live deadline without changing anything.
    fn drop_stale_top(&mut self) {
        while let Some((at, index)) = self.timers.peek() {
            if self.is_current(at, index) {
                return;
            }
            self.timers.pop();
        }
    }

    /// After anything that may have changed socket `index`'s timers or
    /// state: its deadline re-queued if it moved, removed if done. O(log n).
    fn touched(&mut self, index: usize) {
        if let Some(Some(Entry::Socket(s))) = self.entries.get_mut(index) {
            let at = s.conn.poll_at();
            if at != s.scheduled {
                s.scheduled = at;
                if let Some(at) = at {
                    self.timers.push(at, index);
                }
            }
        }
        self.reap(index);
        if self.timers.wants_rebuild() {
            let live = self
                .entries
                .iter()
                .enumerate()
                .filter_map(|(i, e)| match e {
                    Some(Entry::Socket(s)) => s.scheduled.map(|at| (at, i)),
                    _ => None,
                });
            self.timers.rebuild(live);
        }
        self.drop_stale_top();
    }

    fn socket(&mut self, handle: TcpHandle) -> Result<&mut Socket, TcpSocketError> {
        match self.entries.get_mut(handle.0).and_then(Option::as_mut) {
            Some(Entry::Socket(s)) if !s.released => Ok(s),
            Some(Entry::Socket(_)) | None => Err(TcpSocketError::NoSocket),
            Some(Entry::Listener(_)) => Err(TcpSocketError::WrongKind),
        }
    }

    fn socket_ref(&self, handle: TcpHandle) -> Result<&Socket, TcpSocketError> {
        match self.entries.get(handle.0).and_then(Option::as_ref) {
            Some(Entry::Socket(s)) if !s.released => Ok(s),
            Some(Entry::Socket(_)) | None => Err(TcpSocketError::NoSocket),
            Some(Entry::Listener(_)) => Err(TcpSocketError::WrongKind),
        }
    }

    /// Listens on `port` of all our addresses with the set's config; at
    /// most `backlog` connections wait for [`TcpSockets::accept`] (a SYN
    /// beyond that is dropped, as Linux does, so the peer retries).
    pub fn listen(&mut self, port: u16, backlog: usize) -> Result<TcpHandle, TcpSocketError> {
        let config = self.config.clone();
        self.listen_with(port, backlog, config)
    }

    /// [`TcpSockets::listen`] with connections built from `config`.
    pub fn listen_with(
        &mut self,
        port: u16,
        backlog: usize,
        config: TcpConfig,
    ) -> Result<TcpHandle, TcpSocketError> {
        if port == 0 {
            return Err(TcpSocketError::PortZero);
        }
        if self.listeners.contains_key(&port) {
            return Err(TcpSocketError::PortInUse(port));
        }
        let index = self.insert(Entry::Listener(Box::new(Listener {
            port,
            backlog: backlog.max(1),
            config,
            pending: VecDeque::new(),
        })));
        self.listeners.insert(port, index);
        self.by_tuple.listen(port, index);
        Ok(TcpHandle(index))
    }

    /// The oldest connection on `listener` that has completed its
    /// handshake, if any.
    pub fn accept(&mut self, listener: TcpHandle) -> Result<Option<TcpHandle>, TcpSocketError> {
        let pending = match self.entries.get(listener.0).and_then(Option::as_ref) {
            Some(Entry::Listener(l)) => &l.pending,
            Some(Entry::Socket(_)) => return Err(TcpSocketError::WrongKind),
            None => return Err(TcpSocketError::NoSocket),
        };
        let ready = pending.iter().position(|&index| {
            matches!(self.entries.get(index), Some(Some(Entry::Socket(s)))
                if s.conn.state().is_synchronized() && s.conn.state() != State::SynReceived)
        });
        let Some(position) = ready else {
            return Ok(None);
        };
        let Some(Entry::Listener(l)) = self.entries[listener.0].as_mut() else {
            unreachable!("checked above");
        };
        let index = l.pending.remove(position).expect("position is in range");
        if let Some(Some(Entry::Socket(s))) = self.entries.get_mut(index) {
            s.listener = None;
        }
        Ok(Some(TcpHandle(index)))
    }

    /// The configuration connections opened or accepted from now on are
    /// built from (those already open keep theirs): a bench sets each
    /// trial's socket options here.
    pub fn set_config(&mut self, config: TcpConfig) {
        self.config = config;
    }

    /// Opens a connection from `local` (one of the interface's addresses)
    /// and an ephemeral port to `remote`: the SYN leaves at the next
    /// [`TcpSockets::flush`]. Refused for a broadcast or multicast
    /// address (RFC 1122 §4.2.3.10).
    pub fn connect(
        &mut self,
        local: Ipv4Addr,
        remote: SocketAddrV4,
        now: Instant,
    ) -> Result<TcpHandle, TcpSocketError> {
        let config = self.config.clone();
        self.connect_with(local, remote, config, now)
    }

    /// [`TcpSockets::connect`] with a connection built from `config`.
    pub fn connect_with(
        &mut self,
        local: Ipv4Addr,
        remote: SocketAddrV4,
        config: TcpConfig,
        now: Instant,
    ) -> Result<TcpHandle, TcpSocketError> {
        // RFC 1122 §4.2.3.10: an open to a broadcast or multicast address
        // is an error (a directed broadcast, which only the interface
        // knows, is refused when the SYN would leave: see `flush`).
        for addr in [*remote.ip(), local] {
            if !crate::wire::Ipv4Address::from(addr).is_unicast() {
                return Err(TcpSocketError::NotUnicast(addr));
            }
        }
        let tuple = self.free_tuple(local, remote, config.time_wait_reuse, now)?;
        let mut conn = Connection::open_active(config, tuple, &self.isn, now);
        conn.allow_super_segments(self.super_segment_limit);
        conn.leave_payloads_in_send_buffer(true);
        let index = self.insert(Entry::Socket(Box::new(Socket {
            conn,
            listener: None,
            released: false,
            dirty: false,
            scheduled: None,
            soft_error: None,
            ack_template: None,
            route: None,
        })));
        self.by_tuple.insert(tuple, index);
        self.counters.active_opens += 1;
        self.mark_dirty(index);
        Ok(TcpHandle(index))
    }

    /// Queues as much of `data` as the send buffer takes; returns how much.
    pub fn send(&mut self, handle: TcpHandle, data: &[u8]) -> Result<usize, TcpSocketError> {
        let s = self.socket(handle)?;
        if let Some(e) = s.conn.error() {
            return Err(e.into());
        }
        if !s.conn.state().sends_data() && s.conn.state() != State::SynSent {
            return Err(TcpSocketError::NotSending);
        }
        let n = s.conn.send(data);
        if n > 0 {
            self.mark_dirty(handle.0);
        }
        Ok(n)
    }

    /// Bytes [`TcpSockets::send`] would take now.
    pub fn send_capacity(&self, handle: TcpHandle) -> Result<usize, TcpSocketError> {
        Ok(self.socket_ref(handle)?.conn.send_capacity())
    }

    /// Reads received data into `out`; returns how much (0: nothing yet,
    /// or the peer finished: see [`TcpSockets::peer_finished`]).
    pub fn recv(&mut self, handle: TcpHandle, out: &mut [u8]) -> Result<usize, TcpSocketError> {
        let s = self.socket(handle)?;
        let n = s.conn.recv(out);
        if n == 0 {
            if let Some(e) = s.conn.error() {
                return Err(e.into());
            }
        }
        if n > 0 {
            self.mark_dirty(handle.0);
        }
        Ok(n)
    }

    /// Whether the peer sent its FIN and every byte before it was read:
    /// the end of the stream.
    pub fn peer_finished(&self, handle: TcpHandle) -> Result<bool, TcpSocketError> {
        let conn = &self.socket_ref(handle)?.conn;
        let fin_seen = matches!(
            conn.state(),
            State::CloseWait | State::LastAck | State::Closing | State::TimeWait
        ) || (conn.state() == State::Closed && conn.error().is_none());
        Ok(fin_seen && conn.recv_queued() == 0)
    }

    /// Ends this side's sending: a FIN follows the queued data. Reading
    /// goes on.
    pub fn shutdown(&mut self, handle: TcpHandle) -> Result<(), TcpSocketError> {
        let s = self.socket(handle)?;
        s.conn.close();
        self.mark_dirty(handle.0);
        self.touched(handle.0);
        Ok(())
    }

    /// Closes the socket: a listener stops (its unaccepted connections
    /// are reset); a connection sends its FIN after the queued data and
    /// is removed once it reaches CLOSED (after TIME-WAIT if it closed
    /// first; reset after `TimerConfig::fin_wait_2` in FIN-WAIT-2 if the
    /// peer never sends its FIN). The handle is invalid afterwards.
    pub fn close(&mut self, handle: TcpHandle) -> Result<(), TcpSocketError> {
        match self.entries.get_mut(handle.0).and_then(Option::as_mut) {
            Some(Entry::Listener(l)) => {
                let port = l.port;
                let pending: Vec<usize> = l.pending.drain(..).collect();
                self.listeners.remove(&port);
                self.by_tuple.unlisten(handle.0);
                self.remove_entry(handle.0);
                for index in pending {
                    self.abort_index(index);
                }
                Ok(())
            }
            Some(Entry::Socket(s)) if !s.released => {
                s.conn.release();
                s.released = true;
                self.mark_dirty(handle.0);
                self.touched(handle.0);
                Ok(())
            }
            _ => Err(TcpSocketError::NoSocket),
        }
    }

    /// Drops a connection at once, with a RST if the peer knows of it.
    pub fn abort(&mut self, handle: TcpHandle) -> Result<(), TcpSocketError> {
        self.socket(handle)?;
        self.abort_index(handle.0);
        Ok(())
    }

    fn abort_index(&mut self, index: usize) {
        if let Some(Some(Entry::Socket(s))) = self.entries.get_mut(index) {
            let tuple = s.conn.tuple();
            if let Some(rst) = s.conn.abort() {
                self.outbox.push((tuple, rst));
            }
            s.released = true;
            self.touched(index);
        }
    }

    /// The connection behind a handle (state, counters, cwnd, srtt).
    pub fn connection(&self, handle: TcpHandle) -> Result<&Connection, TcpSocketError> {
        Ok(&self.socket_ref(handle)?.conn)
    }

    /// Every live connection, accepted or not.
    pub fn connections(&self) -> impl Iterator<Item = &Connection> {
        self.entries.iter().flatten().filter_map(|e| match e {
            Entry::Socket(s) => Some(&s.conn),
            Entry::Listener(_) => None,
        })
    }

    /// When [`TcpSockets::on_timers`] must next run: the earliest timer
    /// of any connection, read from the top of the timer queue in O(1).
    pub fn poll_at(&self) -> Option<Instant> {
        self.timers.peek().map(|(at, _)| at)
    }

    /// Runs the timers due at `now`, collects what application calls made
    /// to send, and removes connections that are done. Costs O((due +
    /// dirty) · log n): idle connections are not looked at.
    pub fn on_timers(&mut self, now: Instant) {
        let mut visit = std::mem::take(&mut self.visit);
        while let Some((at, index)) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            if self.is_current(at, index) {
                visit.push(index);
            }
        }
        visit.append(&mut self.dirty);
        for index in visit.drain(..) {
            let Some(Some(Entry::Socket(s))) = self.entries.get_mut(index) else {
                continue;
            };
            let due = s.conn.poll_at().is_some_and(|at| at <= now);
            if !due && !s.dirty {
                continue;
            }
            let tuple = s.conn.tuple();
            // One scratch buffer for every call: a window's worth of
            // segments would otherwise grow a fresh Vec each time.
            let mut out = std::mem::take(&mut self.scratch);
            s.conn.lend_payloads(&mut self.payload_pool);
            if due {
                s.conn.on_timer_into(now, &mut out);
            } else {
                s.conn.poll_output_into(now, &mut out);
            }
            s.conn.lend_payloads(&mut self.payload_pool);
            s.dirty = false;
            // Its queue entry was consumed (or is stale): re-queue below.
            s.scheduled = None;
            self.counters.timer_visits += 1;
            self.outbox.extend(out.drain(..).map(|seg| (tuple, seg)));
            self.scratch = out;
            self.touched(index);
        }
        self.visit = visit;
        self.drop_stale_top();
    }

    /// Removes a connection that reached CLOSED and nobody will read:
    /// released by the application, or never accepted.
    fn reap(&mut self, index: usize) {
        let Some(Entry::Socket(s)) = &self.entries[index] else {
            return;
        };
        if s.conn.state() != State::Closed || !(s.released || s.listener.is_some()) {
            return;
        }
        let tuple = s.conn.tuple();
        if let Some(listener) = s.listener {
            if let Some(Some(Entry::Listener(l))) = self.entries.get_mut(listener) {
                l.pending.retain(|&i| i != index);
            }
        }
        if self.by_tuple.get(&tuple) == Some(index) {
            self.by_tuple.remove(&tuple);
        }
        self.remove_entry(index);
    }

    /// A segment for no connection: a listener may take a SYN.
    fn unmatched(&mut self, tuple: FourTuple, seg: &TcpRepr<'_>, now: Instant) -> Delivery {
        self.unmatched_at(tuple, seg, now, None)
    }

    /// [`Self::unmatched`]; a SYN that ended a TIME-WAIT of ours
    /// (`after_time_wait`: the old incarnation's SND.MAX) opens with an
    /// ISN above it.
    fn unmatched_at(
        &mut self,
        tuple: FourTuple,
        seg: &TcpRepr<'_>,
        now: Instant,
        after_time_wait: Option<crate::wire::seq::SeqNumber>,
    ) -> Delivery {
        let listener = self.listeners.get(&seg.dst_port).copied();
        let is_syn = seg.control == crate::wire::TcpControl::Syn && seg.ack_number.is_none();
        if let (Some(li), true) = (listener, is_syn) {
            let Some(Entry::Listener(l)) = &self.entries[li] else {
                unreachable!("the listener map names listeners");
            };
            if l.pending.len() >= l.backlog {
                self.counters.backlog_drops += 1;
                return Delivery::Accepted;
            }
            let mut conn = match after_time_wait {
                Some(old) => Connection::listen_after_time_wait(l.config.clone(), tuple, old),
                None => Connection::listen(l.config.clone(), tuple, &self.isn, now),
            };
            conn.allow_super_segments(self.super_segment_limit);
            conn.leave_payloads_in_send_buffer(true);
            let out = conn.on_segment(seg, now);
            self.outbox.extend(out.into_iter().map(|s| (tuple, s)));
            let index = self.insert(Entry::Socket(Box::new(Socket {
                conn,
                listener: Some(li),
                released: false,
                dirty: false,
                scheduled: None,
                soft_error: None,
                ack_template: None,
                route: None,
            })));
            if let Some(Entry::Listener(l)) = &mut self.entries[li] {
                l.pending.push_back(index);
            }
            self.by_tuple.insert(tuple, index);
            self.counters.passive_opens += 1;
            self.touched(index);
            return Delivery::Accepted;
        }
        self.counters.no_socket += 1;
        if let Some(rst) = reset_for(seg) {
            self.outbox.push((tuple, rst));
        }
        if listener.is_some() {
            Delivery::Accepted
        } else {
            Delivery::NoListener
        }
    }

    /// Handles one TCP segment at `now`, its checksum verified by the
    /// sockets' method.
    pub fn process(&mut self, ip: &Ipv4Repr, bytes: &[u8], now: Instant) -> Delivery {
        self.process_with_checksum(ip, bytes, now, self.checksum)
    }

    /// Handles one TCP segment (the interface's [`IpHandler::tcp`]) at
    /// `now`, its checksum verified by `checksum` (none when the device
    /// vouched for it).
    pub fn process_with_checksum(
        &mut self,
        ip: &Ipv4Repr,
        bytes: &[u8],
        now: Instant,
        checksum: ChecksumMethod,
    ) -> Delivery {
        let parsed = TcpPacket::new_checked(bytes)
            .and_then(|p| TcpRepr::parse(&p, ip.src_addr, ip.dst_addr, checksum));
        let seg = match parsed {
            Ok(seg) => seg,
            Err(_) => {
                self.counters.malformed += 1;
                return Delivery::Accepted;
            }
        };
        let tuple = FourTuple {
            local: SocketAddr::new(IpAddr::V4(ip.dst_addr.into()), seg.dst_port),
            remote: SocketAddr::new(IpAddr::V4(ip.src_addr.into()), seg.src_port),
        };
        let found = {
            let _b = crate::account::enter(crate::account::Block::PcbLookup);
            self.by_tuple.lookup_input(&tuple)
        };
        // Under the PCB list a listener's wildcard PCB may be the match.
        let Some(index) = found.filter(|&i| matches!(self.entries[i], Some(Entry::Socket(_))))
        else {
            return self.unmatched(tuple, &seg, now);
        };
        if let Some(old_snd_max) = self.syn_ends_time_wait(index, &seg) {
            return self.unmatched_at(tuple, &seg, now, Some(old_snd_max));
        }
        let Some(Entry::Socket(s)) = &mut self.entries[index] else {
            unreachable!("the tuple map names connections");
        };
        if s.conn.state() == State::Closed {
            // A closed connection nobody reaped yet answers as no socket.
            self.by_tuple.remove(&tuple);
            return self.unmatched(tuple, &seg, now);
        }
        s.conn.lend_payloads(&mut self.payload_pool);
        let (out, deferred) = if self.ack_per_batch {
            // The deferred reply leaves in `on_timers`, after the batch.
            s.conn.on_segment_in_batch(&seg, now)
        } else {
            (s.conn.on_segment(&seg, now), false)
        };
        s.conn.lend_payloads(&mut self.payload_pool);
        self.outbox.extend(out.into_iter().map(|s| (tuple, s)));
        if deferred {
            self.mark_dirty(index);
        }
        self.touched(index);
        Delivery::Accepted
    }
}

/// The TCP sockets with the time to hand segments in at: the interface's
/// handler for one `poll`.
#[derive(Debug)]
pub struct TcpInput<'a> {
    /// The sockets.
    pub sockets: &'a mut TcpSockets,
    /// When the segments arrived.
    pub now: Instant,
}

impl IpHandler for TcpInput<'_> {
    fn udp(&mut self, _ip: &Ipv4Repr, _udp: &UdpRepr<'_>) -> Delivery {
        Delivery::NoListener
    }

    fn tcp(&mut self, ip: &Ipv4Repr, segment: &[u8], checksum: ChecksumMethod) -> Delivery {
        self.sockets
            .process_with_checksum(ip, segment, self.now, checksum)
    }

    fn icmp_error(&mut self, error: &IcmpError) -> Delivery {
        self.sockets.icmp_error(error)
    }
}

#[path = "tcp_ack_template.rs"]
mod ack_template;
#[path = "tcp_flush.rs"]
mod flush;
#[path = "tcp_icmp.rs"]
mod icmp;
#[path = "tcp_memory.rs"]
mod memory;
#[path = "tcp_ports.rs"]
mod ports;

#[cfg(test)]
#[path = "tcp_tests.rs"]
mod tests;
