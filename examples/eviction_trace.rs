//! Eviction policies compared on the traces of `check::trace`, on the sim with the H200's
//! per-shape creation costs: creations and creation time the sim spent, LRU against cost.
//!
//! `cargo run --release --example eviction_trace -- [--cycles N] [--capacity N]...`
use clap::Parser;
use hipfft_pool::Eviction;
use hipfft_pool::check::trace::{run_trace, traces};

#[derive(Parser)]
struct Args {
    /// Trace length in cycles of the 26 shapes.
    #[arg(long, default_value_t = 20)]
    cycles: usize,
    /// Cache capacities to compare at (the ceiling is the same).
    #[arg(long, default_values_t = vec![4, 8, 13, 20])]
    capacity: Vec<usize>,
}

fn main() -> hipfft_pool::Result<()> {
    let args = Args::parse();
    println!("trace                                   capacity  acquires  lru creations  lru ms  cost creations  cost ms  cost/lru");
    for t in traces(args.cycles) {
        for &cap in &args.capacity {
            let lru = run_trace(&t, cap, Eviction::Lru)?;
            let cost = run_trace(&t, cap, Eviction::Cost)?;
            println!(
                "{:<40}{:>8}{:>10}{:>15}{:>8.1}{:>16}{:>9.1}{:>10.3}",
                t.name,
                cap,
                lru.acquires,
                lru.creations,
                lru.creation_ms,
                cost.creations,
                cost.creation_ms,
                cost.creation_ms / lru.creation_ms
            );
        }
    }
    Ok(())
}
