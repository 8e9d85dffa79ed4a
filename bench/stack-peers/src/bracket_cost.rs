//! `bracket-cost`: what one accountant bracket costs the code around it,
//! in a tight loop around a little work, with accounting off, on, and
//! sampled one round in 8 (a round per bracket, the worst case: the
//! stack has several brackets per round), against the same loop without
//! a bracket.

use serde_json::json;
use stack::account::{self, Block, Options};
use std::hint::black_box;
use std::time::Instant;

/// ns per iteration of `count` iterations of a little work, bracketed or
/// not.
fn loop_ns(count: u64, bracketed: bool) -> f64 {
    let t = Instant::now();
    let mut x = 0u64;
    for i in 0..count {
        if bracketed {
            account::round();
            let _b = account::enter(Block::Checksum);
            x = black_box(x.wrapping_mul(31).wrapping_add(i));
        } else {
            x = black_box(x.wrapping_mul(31).wrapping_add(i));
        }
    }
    black_box(x);
    t.elapsed().as_nanos() as f64 / count as f64
}

/// The JSON line: ns per bracket beyond the bare loop, each mode.
pub fn measure(count: u64) -> serde_json::Value {
    let bare = loop_ns(count, false);
    let off = loop_ns(count, true) - bare;
    account::start(Options::default());
    let on = loop_ns(count, true) - bare;
    account::stop();
    account::start(Options {
        timeline_capacity: 0,
        sample_one_in: 8,
    });
    let sampled = loop_ns(count, true) - bare;
    account::stop();
    json!({
        "test": "bracket-cost",
        "count": count,
        "bare_loop_ns": bare,
        "off_ns": off,
        "on_ns": on,
        "sample_8_ns": sampled,
    })
}
