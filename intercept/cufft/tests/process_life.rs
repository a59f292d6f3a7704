//! Real process life under `libhipfft_pool_cufft.so` on the simulated runtime: handles passed
//! between threads, destroyed while executing, created for ever; fork, exits together, exit
//! from a signal handler; a Python program that forks (see `tests/common/process_life.rs`).

#[path = "../../tests/common/harness.rs"]
mod harness;
#[path = "../../tests/common/process_life.rs"]
mod process_life;

use std::path::PathBuf;
use std::sync::OnceLock;

const LIB: &str = "hipfft_pool_cufft";

fn program() -> &'static PathBuf {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| process_life::build(LIB, "hipfft-pool-cufft", &[]))
}

#[test]
fn handles_passed_between_threads_at_a_full_ceiling() {
    process_life::handles_passed_between_threads_at_a_full_ceiling(program());
}

#[test]
fn a_destroy_racing_an_execution_strands_no_lease() {
    process_life::a_destroy_racing_an_execution_strands_no_lease(program());
}

#[test]
fn creating_and_destroying_handles_for_ever() {
    process_life::creating_and_destroying_handles_for_ever(program());
}

#[test]
fn children_that_never_call_the_api_exit_at_once_and_write_nothing() {
    process_life::children_that_never_call_the_api_exit_at_once_and_write_nothing(program());
}

#[test]
fn a_child_that_uses_the_api_gets_a_fresh_pool_and_a_file_of_its_own() {
    process_life::a_child_that_uses_the_api_gets_a_fresh_pool_and_a_file_of_its_own(program());
}

#[test]
fn processes_exiting_together_write_whole_files() {
    process_life::processes_exiting_together_write_whole_files(program());
}

#[test]
fn exit_from_a_signal_handler_never_hangs() {
    process_life::exit_from_a_signal_handler_never_hangs(program());
}

#[test]
fn python_children_exit_at_once() {
    let lib = harness::library_dir(LIB, "hipfft-pool-cufft").join(format!("lib{LIB}.so"));
    process_life::python_children_exit_at_once(&lib);
}
