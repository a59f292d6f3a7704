//! placeholder: the hip-shim crate
