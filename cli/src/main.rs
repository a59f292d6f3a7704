//! `hipfft-pool`: the probe that hung hipFFT, run through the pool, and the tools around it.

use std::process::ExitCode;

use clap::{Parser, Subcommand};



mod hang;
mod info;
mod launch;
mod legacy;
mod plot;
mod probe;
mod sweep;

#[derive(Parser, Debug)]
#[command(name = "hipfft-pool", version, about = "A hipFFT plan pool: probe, sweep and inspect")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Cycle the probe shapes through the pool and check every result.
    Probe(probe::ProbeArgs),
    /// Run the probe at each configuration in a child process, kill hung runs after
    /// recording their backtraces, and write a report (docs/investigation.md).
    Sweep(sweep::SweepArgs),
    /// Show the runtime found, its libraries and devices, and the effective configuration.
    Info(info::InfoArgs),
    /// Run a program with its cuFFT (or hipFFT) plans served from the pool: preloads the
    /// interposer, passes the exit status through, prints the pool's summary at exit.
    Run(launch::RunArgs),
}

pub fn run(cli: Cli) -> hipfft_pool::Result<ExitCode> {
    init_tracing();
    match cli.command {
        Command::Probe(a) => probe::run(a),
        Command::Info(a) => info::run(a),
        Command::Sweep(a) => sweep::run(a),
        Command::Run(a) => launch::run(a),
    }
}

fn init_tracing() {
    // Warnings go to stderr; RUST_LOG-style filtering is left to the host in library use.
    let _ = tracing::subscriber::set_global_default(StderrWarnings);
}

/// A tiny subscriber that prints warnings and errors, so `from_env` warnings reach a person.
struct StderrWarnings;

impl tracing::Subscriber for StderrWarnings {
    fn enabled(&self, m: &tracing::Metadata<'_>) -> bool {
        *m.level() <= tracing::Level::WARN
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, e: &tracing::Event<'_>) {
        struct V(String);
        impl tracing::field::Visit for V {
            fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                if f.name() == "message" {
                    self.0.insert_str(0, &format!("{v:?} "));
                } else {
                    self.0.push_str(&format!("{}={v:?} ", f.name()));
                }
            }
        }
        let mut v = V(String::new());
        e.record(&mut v);
        eprintln!("hipfft-pool: {}: {}", e.metadata().level(), v.0.trim_end());
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}


fn main() -> ExitCode {
    let args = Cli::parse();
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("hipfft-pool: {e}");
            ExitCode::from(2)
        }
    }
}
