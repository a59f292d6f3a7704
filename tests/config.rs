//! Every descriptor rejection and every bad environment value, each with a clear message.

use std::collections::HashMap;
use std::time::Duration;

use hipfft_pool::pool::config::parse_whole;
use hipfft_pool::desc::{DescError, Field};
use hipfft_pool::{Error, Layout, PlanDesc, PoolConfig, TransformType};

fn rejects(d: PlanDesc, needle: &str) -> DescError {
    let e = d.validate().unwrap_err();
    assert!(e.to_string().contains(needle), "{e} should mention {needle}");
    e
}

#[test]
fn every_descriptor_field_is_checked_by_name() {
    let base = PlanDesc::new(TransformType::C2C, &[64, 32], 4);
    assert!(base.validate().is_ok());
    assert_eq!(TransformType::from_raw(0x77).unwrap_err(), DescError::UnknownTransform { value: 0x77 });
    let mut d = base;
    d.rank = 0;
    rejects(d, "`rank` = 0");
    d.rank = 4;
    rejects(d, "`rank` = 4");
    let mut d = base;
    d.n[1] = 0;
    assert_eq!(rejects(d, "`n[1]` = 0"), DescError::NotPositive { field: Field::at("n", 1), value: 0 });
    d.n[1] = -5;
    rejects(d, "`n[1]` = -5");
    let mut d = base;
    d.batch = 0;
    rejects(d, "`batch` = 0");
    let mut d = base;
    d.device = -1;
    rejects(d, "`device` = -1");
    let lay = |e: &[i64], s, dist| Layout::new(e, s, dist);
    rejects(base.with_input_layout(lay(&[64, 32], 0, 2048)), "`istride` = 0");
    rejects(base.with_input_layout(lay(&[64, 32], 1, 0)), "`idist` = 0");
    rejects(base.with_output_layout(lay(&[64, 32], -1, 2048)), "`ostride` = -1");
    rejects(base.with_output_layout(lay(&[64, 32], 1, -3)), "`odist` = -3");
    rejects(base.with_input_layout(lay(&[64, 31], 1, 2048)), "`inembed[1]` = 31");
    rejects(base.with_output_layout(lay(&[63, 32], 1, 2048)), "`onembed[0]` = 63");
    rejects(base.with_input_layout(lay(&[0, 32], 1, 2048)), "`inembed[0]` = 0");
    // The complex side of a real transform holds n/2+1 points: 17 for n = 32.
    let r2c = PlanDesc::new(TransformType::R2C, &[64, 32], 4);
    assert!(r2c.with_output_layout(lay(&[64, 17], 1, 64 * 17)).validate().is_ok());
    rejects(r2c.with_output_layout(lay(&[64, 16], 1, 64 * 17)), "`onembed[1]` = 16 is smaller than the complex extent 17");
    let c2r = PlanDesc::new(TransformType::C2R, &[64, 32], 4);
    rejects(c2r.with_input_layout(lay(&[64, 16], 1, 64 * 17)), "`inembed[1]` = 16");
    // Overflow of the element count, of the index space, and of the byte extent.
    rejects(PlanDesc::new(TransformType::C2C, &[1 << 31, 1 << 31, 1 << 31], 1), "overflow");
    rejects(PlanDesc::new(TransformType::C2C, &[1 << 40], 1 << 30), "overflow");
    rejects(base.with_input_layout(lay(&[64, 32], i64::MAX / 2, 1)), "`istride`");
    rejects(base.with_input_layout(lay(&[64, 32], 1, i64::MAX / 2)), "`idist`");
    rejects(PlanDesc::new(TransformType::Z2Z, &[1 << 31], 1 << 30), "byte extent");
}

#[test]
fn equal_descriptors_are_one_key_and_unequal_ones_are_not() {
    use std::collections::HashSet;
    let a = PlanDesc::new(TransformType::R2C, &[400], 4);
    let mut set = HashSet::new();
    set.insert(a);
    assert!(set.contains(&PlanDesc::new(TransformType::R2C, &[400], 4)));
    assert!(!set.contains(&PlanDesc::new(TransformType::R2C, &[400], 3)));
    assert!(!set.contains(&PlanDesc::new(TransformType::C2R, &[400], 4)));
    assert!(!set.contains(&a.on_device(1)));
    assert!(!set.contains(&a.with_input_layout(Layout::new(&[400], 1, 400))));
}

fn env(pairs: &[(&str, &str)]) -> (PoolConfig, Vec<String>) {
    let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    PoolConfig::from_lookup(|k| m.get(k).cloned())
}

#[test]
fn environment_defaults_and_precedence() {
    let (c, w) = env(&[]);
    assert!(w.is_empty());
    assert_eq!((c.capacity, c.live_ceiling, c.acquire_timeout), (128, 128, Duration::from_secs(10)));
    let (c, _) = env(&[("MLX_ROCM_FFT_CACHE_SIZE", "16")]);
    assert_eq!((c.capacity, c.live_ceiling), (16, 16), "MLX's knob sets the capacity, and the ceiling follows");
    let (c, _) = env(&[("MLX_ROCM_FFT_CACHE_SIZE", "16"), ("HIPFFT_POOL_CAPACITY", "32")]);
    assert_eq!(c.capacity, 32, "HIPFFT_POOL_CAPACITY wins");
    let (c, w) = env(&[("HIPFFT_POOL_CAPACITY", "64"), ("HIPFFT_POOL_LIVE_CEILING", "12")]);
    assert_eq!((c.capacity, c.live_ceiling), (12, 12), "clamped");
    assert!(w[0].contains("capacity 64 is above the live ceiling 12"), "{w:?}");
    let (c, _) = env(&[("HIPFFT_POOL_ACQUIRE_TIMEOUT_MS", "250"), ("HIPFFT_POOL_RUNTIME", "sim")]);
    assert_eq!(c.acquire_timeout, Duration::from_millis(250));
    assert_eq!(c.runtime, hipfft_pool::RuntimeChoice::Sim);
}

#[test]
fn bad_environment_values_keep_the_default_with_a_warning_naming_them() {
    // Blanks around a value are trimmed, and an empty value is unset (the config module's unit tests).
    for bad in ["-1", "8abc", "0", "1 2", "+5", "1e3", "99999999999999999999999", "2000000"] {
        for var in ["HIPFFT_POOL_CAPACITY", "HIPFFT_POOL_LIVE_CEILING", "MLX_ROCM_FFT_CACHE_SIZE"] {
            let (c, w) = env(&[(var, bad)]);
            assert_eq!((c.capacity, c.live_ceiling), (128, 128), "{var}={bad:?}");
            assert_eq!(w.len(), 1, "{var}={bad:?}: {w:?}");
            assert!(w[0].contains(var) && w[0].contains(&format!("{bad:?}")), "{}", w[0]);
        }
        let (c, w) = env(&[("HIPFFT_POOL_ACQUIRE_TIMEOUT_MS", bad)]);
        if bad != "2000000" {
            assert_eq!(c.acquire_timeout, Duration::from_secs(10));
            assert!(w[0].contains("HIPFFT_POOL_ACQUIRE_TIMEOUT_MS"));
        }
    }
    let (_, w) = env(&[("HIPFFT_POOL_RUNTIME", "rocm")]);
    assert!(w[0].contains("HIPFFT_POOL_RUNTIME=\"rocm\""));
    assert_eq!(parse_whole("42", 100), Ok(42));
    assert!(parse_whole("101", 100).unwrap_err().contains("maximum"));
}

#[test]
fn the_builder_rejects_capacity_above_the_ceiling_and_zeroes() {
    let e = PoolConfig::builder().capacity(16).live_ceiling(8).build().unwrap_err();
    assert!(matches!(e, Error::InvalidConfig { field: "capacity", .. }), "{e}");
    assert!(e.to_string().contains("16"));
    assert!(PoolConfig::builder().capacity(0).build().is_err());
    assert!(PoolConfig::builder().capacity(4).live_ceiling(0).build().is_err());
    let c = PoolConfig::builder().capacity(8).build().unwrap();
    assert_eq!(c.live_ceiling, 8, "the ceiling defaults to the capacity");
}
