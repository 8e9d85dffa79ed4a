//! Host sections: the facts of the measuring host, its host profile
//! (`tcplab calibrate`) as a table, and the note on 4K-aliased copies.

use record::{HostFacts, HostProfile, Measured, Store, StoredRun};
use report::doc::{host_facts, host_sysctls};
use report::{measure, Block, Section, Table, Unit};

/// A run report's Host section: the host's facts, the host profile the run
/// references and the sysctls read at the start of the run.
pub fn host_section(store: &Store, run: &StoredRun) -> Section {
    let h = &run.meta.host;
    let mut s = Section::new("Host");
    s.paragraph("Facts about the measuring host, read at the start of the run.");
    s.push(host_facts(h));
    for b in host_profile_blocks(store, run) {
        s.push(b);
    }
    if !h.sysctls.is_empty() {
        s.push(host_sysctls(h));
    }
    s
}

/// The host profile the run references (`tcplab calibrate`), as a table.
fn host_profile_blocks(store: &Store, run: &StoredRun) -> Vec<Block> {
    match store.run_host_profile(run.meta.id) {
        Ok(Some((id, p))) => vec![Block::Table(profile_table(&p).with_caption(format!(
            "Host profile {id} (tcplab calibrate, {})",
            p.created_at
        )))],
        _ => vec![Block::Paragraph(
            "No host profile: run tcplab calibrate before measuring to record this host's \
             copy, checksum, system call and context switch costs."
                .into(),
        )],
    }
}

/// A study report's "This host" section: the host's facts, its host
/// profile (`tcplab calibrate`) and the aliasing note when it applies.
pub fn study_host_section(h: &HostFacts, profile: Option<&(i64, HostProfile)>) -> Section {
    let mut s = Section::new("This host");
    let mut kv = vec![
        ("CPU".to_string(), format!("{} × {}", h.cores, h.cpu_model)),
        (
            "CPU clock, SMT, hypervisor".to_string(),
            format!(
                "{}; SMT {}; hypervisor: {}",
                h.cpu_mhz
                    .map_or("clock not recorded".to_string(), |m| format!(
                        "{m:.0} MHz as the kernel reports it"
                    )),
                if h.smt.is_empty() {
                    "not recorded"
                } else {
                    &h.smt
                },
                if h.hypervisor.is_empty() {
                    "not recorded"
                } else {
                    &h.hypervisor
                }
            ),
        ),
        ("kernel".to_string(), h.kernel.clone()),
        ("system".to_string(), h.os.clone()),
        (
            "congestion control".to_string(),
            h.congestion_control.clone(),
        ),
    ];
    for k in [
        "net.ipv4.tcp_rmem",
        "net.ipv4.tcp_wmem",
        "net.core.rmem_max",
    ] {
        if let Some(v) = h.sysctls.get(k) {
            kv.push((k.to_string(), v.clone()));
        }
    }
    s.push(Block::KeyValues(kv));
    if let Some((id, p)) = profile {
        s.push(profile_table(p).with_caption(format!(
            "Host profile {id} (tcplab calibrate, {})",
            p.created_at
        )));
        if let Some(note) = aliasing_note(p) {
            s.push(Block::Paragraph(note));
        }
    }
    s
}

/// The profile as a table: one row per measurement.
pub fn profile_table(p: &HostProfile) -> Table {
    let mut t = Table::new(["measurement", "median", "mean ± 95% CI", "n"]);
    for (name, m, unit) in rows(p) {
        t.row([
            name.to_string(),
            measure(m.median, None, unit),
            measure(m.mean, Some(m.ci95), unit),
            m.n.to_string(),
        ]);
    }
    t
}

/// The profile's measurements in table order: name, figure, unit.
fn rows(p: &HostProfile) -> Vec<(&'static str, &Measured, Unit)> {
    let mut rows = vec![
        ("memory copy, in cache", &p.copy_cache, Unit::Si("B/s")),
        ("memory copy, DRAM", &p.copy_dram, Unit::Si("B/s")),
        (
            "checksum, RFC 1071 loop",
            &p.checksum_rfc1071,
            Unit::Si("B/s"),
        ),
        ("checksum, fast", &p.checksum_fast, Unit::Si("B/s")),
        ("null system call", &p.null_syscall, Unit::Si("s")),
        (
            "context switch (pipe ping-pong)",
            &p.context_switch,
            Unit::Si("s"),
        ),
        ("pipe write + read alone", &p.pipe_overhead, Unit::Si("s")),
        ("CPU score (iterations/s)", &p.cpu_score, Unit::Plain),
    ];
    if let Some(net) = &p.context_switch_net {
        rows.insert(7, ("context switch, pipe subtracted", net, Unit::Si("s")));
    }
    if let Some(aliased) = &p.copy_cache_aliased {
        rows.insert(
            1,
            (
                "memory copy, in cache, 4K-aliased",
                aliased,
                Unit::Si("B/s"),
            ),
        );
    }
    rows
}

/// A line when this CPU copies much slower with the destination just past a
/// 4 KiB multiple from the source: such copies happen inside the kernel's
/// socket reads and writes, so throughput then depends on buffer placement.
pub fn aliasing_note(p: &HostProfile) -> Option<String> {
    let aliased = p.copy_cache_aliased.as_ref()?;
    let slowdown = p.copy_cache.median / aliased.median;
    (slowdown >= 2.0).then(|| {
        format!(
            "Copies whose destination lies {} bytes past a 4 KiB multiple from the source \
             run {slowdown:.0}× slower on this CPU; socket throughput can then depend on where \
             buffers sit",
            calibrate::copy::ALIAS_SKEW
        )
    })
}
