//! The CUDA driver's graph calls, hooked.
use crate::graphs::view::CaptureView;

/// The driver's capture view, if libcuda has what it needs.
pub fn view() -> Option<Box<dyn CaptureView>> {
    None
}
