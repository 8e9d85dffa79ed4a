//! Route lookup cost per table structure (Huang & Chen's routing-table
//! lookups): 10, 1,000 and 100,000 random routes in each of the linear,
//! hash and trie tables, 10,000 random destinations looked up in each, ns
//! per lookup printed. Rounds alternate the structures, so a noisy spell
//! on a shared VM touches all three alike; the medians are printed.
//!
//! `cargo bench -p stack --bench route_lookup -- [--rounds N]`

use rand::{RngExt, SeedableRng};
use stack::iface::route::{new_table, Ipv4Cidr, NextHop, Route, RouteTableKind};
use std::net::Ipv4Addr;
use std::time::Instant;

const KINDS: [RouteTableKind; 3] = [
    RouteTableKind::Linear,
    RouteTableKind::Hash,
    RouteTableKind::Trie,
];

fn rounds_from_args() -> usize {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == "--rounds") {
        Some(i) => match args.get(i + 1).and_then(|v| v.parse().ok()) {
            Some(n) if n > 0 => n,
            _ => {
                eprintln!("route_lookup: --rounds takes a positive whole number");
                std::process::exit(2);
            }
        },
        None => 5,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let rounds = rounds_from_args();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    println!(
        "{:>7}  {:<7} {:>12}  (median of {rounds} alternated rounds)",
        "routes", "table", "ns/lookup"
    );
    for n in [10usize, 1_000, 100_000] {
        let routes: Vec<Route> = (0..n)
            .map(|_| Route {
                cidr: Ipv4Cidr::new(
                    Ipv4Addr::from(rng.random::<u32>()),
                    rng.random_range(8..=32),
                )
                .expect("a prefix of at most 32 bits"),
                next_hop: NextHop::Direct,
            })
            .collect();
        let dsts: Vec<Ipv4Addr> = (0..10_000)
            .map(|_| Ipv4Addr::from(rng.random::<u32>()))
            .collect();
        let tables: Vec<_> = KINDS
            .iter()
            .map(|&kind| {
                let mut t = new_table(kind);
                for r in &routes {
                    t.add(*r);
                }
                t
            })
            .collect();
        let mut ns = vec![Vec::new(); KINDS.len()];
        for _ in 0..rounds {
            for (i, t) in tables.iter().enumerate() {
                let start = Instant::now();
                let mut hits = 0usize;
                for d in &dsts {
                    hits += usize::from(std::hint::black_box(t.lookup(*d)).is_some());
                }
                std::hint::black_box(hits);
                ns[i].push(start.elapsed().as_nanos() as f64 / dsts.len() as f64);
            }
        }
        for (kind, v) in KINDS.iter().zip(ns) {
            println!("{n:>7}  {:<7} {:>12.1}", format!("{kind:?}"), median(v));
        }
    }
}
