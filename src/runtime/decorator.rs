//! Wrappers around a runtime (the audit, test doubles, fault injectors) without forwarding
//! code: implement [`Decorator`], override the calls to watch, and the blanket impl makes
//! the type a [`Runtime`] whose other calls go to [`Decorator::inner`]. Both traits are
//! `unsafe` to implement: safe wrappers trust the handles and pointers a runtime returns.

use crate::desc::{Direction, PlanDesc, TransformType};
use crate::error::Result;
use crate::runtime::boundary::{
    CreatedPlan, DevicePtr, HostCall, PlanOptions, RawEvent, RawPlan, RawStream, Rebind, Runtime, RuntimeInfo, RuntimeKind,
};

/// One list of the trait's calls makes both the forwarding defaults and the blanket impl,
/// so a call added to `Runtime` and not here fails to compile. The `unsafe` list holds the
/// calls that take a raw handle or device pointer: they stay `unsafe fn` here, with the
/// contract of the [`Runtime`] call of the same name.
macro_rules! decorator {
    (
        safe { $( fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty; )* }
        unsafe { $( fn $uname:ident(&self $(, $uarg:ident: $uty:ty)*) -> $uret:ty; )* }
    ) => {
        /// A runtime that wraps another. Each call goes to [`Decorator::inner`] unless the
        /// implementation overrides it; the semantics of each are [`Runtime`]'s.
        ///
        /// # Safety
        ///
        /// The implementation keeps [`Runtime`]'s promises: a call it overrides returns
        /// what the inner runtime returned, an error, or a value that honours the same
        /// contract (a handle or pointer valid for the inner runtime's calls).
        pub unsafe trait Decorator: Send + Sync + 'static {
            /// The wrapped runtime.
            fn inner(&self) -> &dyn Runtime;
            $(
                #[doc = concat!("[`Runtime::", stringify!($name), "`], forwarded to [`Decorator::inner`] by default.")]
                #[allow(clippy::too_many_arguments)]
                fn $name(&self $(, $arg: $ty)*) -> $ret {
                    self.inner().$name($($arg),*)
                }
            )*
            $(
                #[doc = concat!("[`Runtime::", stringify!($uname), "`], forwarded to [`Decorator::inner`] by default.")]
                ///
                /// # Safety
                #[doc = concat!("The contract of [`Runtime::", stringify!($uname), "`], for the runtime this decorates.")]
                #[allow(clippy::too_many_arguments)]
                unsafe fn $uname(&self $(, $uarg: $uty)*) -> $uret {
                    // SAFETY: the caller upholds this call's contract, which is the inner
                    // runtime's: a decorator passes the same handles and pointers on.
                    unsafe { self.inner().$uname($($uarg),*) }
                }
            )*
        }

        // SAFETY: a `Decorator` promises `Runtime`'s contract (its own `# Safety`).
        unsafe impl<D: Decorator> Runtime for D {
            $(
                #[allow(clippy::too_many_arguments)]
                #[inline]
                fn $name(&self $(, $arg: $ty)*) -> $ret {
                    Decorator::$name(self $(, $arg)*)
                }
            )*
            $(
                #[allow(clippy::too_many_arguments)]
                #[inline]
                unsafe fn $uname(&self $(, $uarg: $uty)*) -> $uret {
                    // SAFETY: the same contract, passed through unchanged.
                    unsafe { Decorator::$uname(self $(, $uarg)*) }
                }
            )*
        }
    };
}

decorator! {
    safe {
        fn kind(&self) -> RuntimeKind;
        fn info(&self) -> RuntimeInfo;
        fn device_count(&self) -> Result<i32>;
        fn current_device(&self) -> Result<i32>;
        fn set_device(&self, device: i32) -> Result<()>;
        fn device_flags(&self) -> Result<Option<u32>>;
        fn plan_create(&self, desc: &PlanDesc, options: PlanOptions) -> Result<CreatedPlan>;
        fn event_create(&self) -> Result<RawEvent>;
        fn stream_create(&self) -> Result<RawStream>;
        fn malloc(&self, bytes: usize) -> Result<DevicePtr>;
    }
    unsafe {
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
        fn plan_exec_bound(
            &self,
            plan: RawPlan,
            transform: TransformType,
            stream: RawStream,
            work_area: Option<DevicePtr>,
            input: DevicePtr,
            output: DevicePtr,
            direction: Direction,
            rebind: Rebind
        ) -> Result<()>;
        fn plan_bind(&self, plan: RawPlan, stream: Option<RawStream>, work_area: Option<DevicePtr>) -> Result<bool>;
        fn plan_destroy(&self, plan: RawPlan) -> Result<()>;
        fn event_record(&self, event: RawEvent, stream: RawStream) -> Result<()>;
        fn event_query(&self, event: RawEvent) -> Result<bool>;
        fn event_synchronize(&self, event: RawEvent) -> Result<()>;
        fn event_destroy(&self, event: RawEvent) -> Result<()>;
        fn stream_synchronize(&self, stream: RawStream) -> Result<()>;
        fn stream_destroy(&self, stream: RawStream) -> Result<()>;
        fn free(&self, ptr: DevicePtr) -> Result<()>;
        fn memcpy_htod(&self, dst: DevicePtr, src: &[u8]) -> Result<()>;
        fn memcpy_dtoh(&self, dst: &mut [u8], src: DevicePtr) -> Result<()>;
        fn memcpy_dtod_async(&self, dst: DevicePtr, src: DevicePtr, bytes: usize, stream: RawStream) -> Result<()>;
        fn stream_is_capturing(&self, stream: RawStream) -> Result<bool>;
        fn launch_host_fn(&self, stream: RawStream, call: HostCall) -> Result<()>;
    }
}
