//! Wrappers around a runtime (the audit, test doubles, fault injectors) without forwarding
//! code: implement [`Decorator`], override the calls to watch, and the blanket impl makes
//! the type a [`Runtime`] whose other calls go to [`Decorator::inner`].

use crate::desc::{Direction, PlanDesc, TransformType};
use crate::error::Result;
use crate::runtime::boundary::{CreatedPlan, DevicePtr, HostCall, PlanOptions, RawEvent, RawPlan, RawStream, Runtime, RuntimeInfo, RuntimeKind};

/// One list of the trait's calls makes both the forwarding defaults and the blanket impl,
/// so a call added to `Runtime` and not here fails to compile.
macro_rules! decorator {
    ($( fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty; )*) => {
        /// A runtime that wraps another. Each call goes to [`Decorator::inner`] unless the
        /// implementation overrides it; the semantics of each are [`Runtime`]'s.
        pub trait Decorator: Send + Sync + 'static {
            /// The wrapped runtime.
            fn inner(&self) -> &dyn Runtime;
            $(
                #[allow(clippy::too_many_arguments)]
                fn $name(&self $(, $arg: $ty)*) -> $ret {
                    self.inner().$name($($arg),*)
                }
            )*
        }

        impl<D: Decorator> Runtime for D {
            $(
                #[allow(clippy::too_many_arguments)]
                #[inline]
                fn $name(&self $(, $arg: $ty)*) -> $ret {
                    Decorator::$name(self $(, $arg)*)
                }
            )*
        }
    };
}

decorator! {
    fn kind(&self) -> RuntimeKind;
    fn info(&self) -> RuntimeInfo;
    fn device_count(&self) -> Result<i32>;
    fn current_device(&self) -> Result<i32>;
    fn set_device(&self, device: i32) -> Result<()>;
    fn plan_create(&self, desc: &PlanDesc, options: PlanOptions) -> Result<CreatedPlan>;
    fn plan_exec(
        &self,
        plan: RawPlan,
        transform: TransformType,
        stream: RawStream,
        work_area: Option<DevicePtr>,
        input: DevicePtr,
        output: DevicePtr,
        direction: Direction
    ) -> Result<()>;
    fn plan_destroy(&self, plan: RawPlan) -> Result<()>;
    fn event_create(&self) -> Result<RawEvent>;
    fn event_record(&self, event: RawEvent, stream: RawStream) -> Result<()>;
    fn event_query(&self, event: RawEvent) -> Result<bool>;
    fn event_synchronize(&self, event: RawEvent) -> Result<()>;
    fn event_destroy(&self, event: RawEvent) -> Result<()>;
    fn stream_create(&self) -> Result<RawStream>;
    fn stream_synchronize(&self, stream: RawStream) -> Result<()>;
    fn stream_destroy(&self, stream: RawStream) -> Result<()>;
    fn malloc(&self, bytes: usize) -> Result<DevicePtr>;
    fn free(&self, ptr: DevicePtr) -> Result<()>;
    fn memcpy_htod(&self, dst: DevicePtr, src: &[u8]) -> Result<()>;
    fn memcpy_dtoh(&self, dst: &mut [u8], src: DevicePtr) -> Result<()>;
    fn memcpy_dtod_async(&self, dst: DevicePtr, src: DevicePtr, bytes: usize, stream: RawStream) -> Result<()>;
    fn stream_is_capturing(&self, stream: RawStream) -> Result<bool>;
    fn launch_host_fn(&self, stream: RawStream, call: HostCall) -> Result<()>;
}
