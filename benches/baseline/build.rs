//! Compiles the C++ baseline with the system C++ compiler (`-O2 -std=c++17`).

fn main() {
    println!("cargo::rerun-if-changed=baseline.cpp");
    println!("cargo::rerun-if-changed=build.rs");
    cc::Build::new()
        .cpp(true)
        .file("baseline.cpp")
        .flag("-std=c++17")
        .opt_level(2)
        .warnings(true)
        .compile("hfp_baseline");
}
