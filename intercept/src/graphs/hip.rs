//! HIP's graph calls, hooked.
use crate::graphs::view::CaptureView;

/// HIP's capture view, if the HIP runtime has what it needs.
pub fn view() -> Option<Box<dyn CaptureView>> {
    None
}
