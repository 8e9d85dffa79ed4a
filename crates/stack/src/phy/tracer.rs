//! A device that records every frame its inner device receives or is given
//! to transmit, as pcapng that Wireshark and tshark open: one interface of
//! link type RAW (IP medium) or ETHERNET, nanosecond timestamps from the
//! injected clock, and the direction in each packet's flags (inbound or
//! outbound). A virtio-net header is not traced: the file holds the packet
//! as the wire would (a super-packet stays one record).

use super::vnet::VNET_HDR_LEN;
use super::{Capabilities, Device, Medium, PhyError};
use crate::time::Clock;
use pcap_file::pcapng::blocks::enhanced_packet::{EnhancedPacketBlock, EnhancedPacketOption};
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::DataLink;
use std::borrow::Cow;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// `epb_flags` direction bits (pcapng §4.3.1): inbound.
const FLAG_INBOUND: u32 = 0b01;
/// `epb_flags` direction bits: outbound.
const FLAG_OUTBOUND: u32 = 0b10;

/// Wraps `D`, writing its traffic to `W` as pcapng.
pub struct Tracer<D: Device, W: Write> {
    inner: D,
    writer: PcapNgWriter<W>,
    clock: Arc<dyn Clock>,
    /// Wall-clock time (since the Unix epoch) at the clock's origin.
    origin: Duration,
    skip: usize,
    frames: u64,
}

impl<D: Device, W: Write> Tracer<D, W> {
    /// Starts a trace of `inner` into `out` (writing the section and
    /// interface headers now), stamped by `clock`.
    pub fn new(inner: D, out: W, clock: Arc<dyn Clock>) -> Result<Self, PhyError> {
        let caps = inner.capabilities();
        let mut writer = PcapNgWriter::new(out)?;
        writer.write_pcapng_block(InterfaceDescriptionBlock {
            linktype: match caps.medium {
                Medium::Ip => DataLink::RAW,
                Medium::Ethernet => DataLink::ETHERNET,
            },
            snaplen: 0,
            // pcap-file writes nanoseconds; say so, or readers assume µs.
            options: vec![InterfaceDescriptionOption::IfTsResol(9)],
        })?;
        let wall = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        let origin = wall.saturating_sub(Duration::from_nanos(clock.now().nanos()));
        Ok(Tracer {
            inner,
            writer,
            clock,
            origin,
            skip: if caps.offloads.vnet_header {
                VNET_HDR_LEN
            } else {
                0
            },
            frames: 0,
        })
    }

    /// How many frames have been written to the trace.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// The inner device.
    pub fn inner_mut(&mut self) -> &mut D {
        &mut self.inner
    }

    /// Flushes and returns the writer (the trace is complete).
    pub fn finish(self) -> Result<W, PhyError> {
        let mut w = self.writer.into_inner();
        w.flush().map_err(|e| PhyError::Io {
            op: "write",
            source: e,
        })?;
        Ok(w)
    }

    fn record(&mut self, frame: &[u8], flags: u32) -> Result<(), PhyError> {
        let data = frame.get(self.skip..).unwrap_or(&[]);
        let at = self.origin + Duration::from_nanos(self.clock.now().nanos());
        self.writer.write_pcapng_block(EnhancedPacketBlock {
            interface_id: 0,
            timestamp: at,
            original_len: data.len() as u32,
            data: Cow::Borrowed(data),
            options: vec![EnhancedPacketOption::Flags(flags)],
        })?;
        self.frames += 1;
        Ok(())
    }
}

impl<D: Device, W: Write> Device for Tracer<D, W> {
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn receive(&mut self, buf: &mut [u8]) -> Result<Option<usize>, PhyError> {
        let got = self.inner.receive(buf)?;
        if let Some(n) = got {
            self.record(&buf[..n], FLAG_INBOUND)?;
        }
        Ok(got)
    }

    fn transmit(&mut self, frame: &[u8]) -> Result<(), PhyError> {
        self.inner.transmit(frame)?;
        self.record(frame, FLAG_OUTBOUND)
    }

    fn wait(&mut self, timeout: Option<Duration>) -> Result<bool, PhyError> {
        self.inner.wait(timeout)
    }
}
