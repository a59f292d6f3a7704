//! `hipfft-pool`: the probe that hung hipFFT, run through the pool, and the tools around it.

use std::process::ExitCode;

use clap::Parser;

mod cli;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("hipfft-pool: {e}");
            ExitCode::from(2)
        }
    }
}
