//! The process's GPUs: opened on first use (every device, or those
//! [`GPUS_ENV`] names), absent (an `Err` saying why, never a panic) when libcuda, libnvrtc
//! or a device is missing. Each device has its own context, lanes and memory budget. Kernels from `kernels/` are compiled by
//! NVRTC for the device's own compute capability, with the constants their launchers pass
//! as `-D` defines, once per process and per set of defines; the CUBIN is kept on disk
//! ([`KERNEL_CACHE_ENV`](super::KERNEL_CACHE_ENV)) so later processes skip NVRTC.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
use cudarc::nvrtc::Ptx;
use serde::Serialize;

use super::budget::MemoryBudget;
use super::error::{GpuError, GpuResult};
use super::kernel_cache::KernelCache;
use super::lane::LanePool;
use super::pipeline::PIPELINE_LANES;
use super::steps::step_bytes;

/// A kernel source file, embedded in the binary.
#[derive(Clone, Copy, Debug)]
pub struct KernelSource {
    /// The file's name in `kernels/`.
    pub name: &'static str,
    pub source: &'static str,
}

/// A constant the Rust side gives a kernel file (`-D NAME=VALUE`), so Rust and CUDA share
/// one definition of block sizes, layouts and error codes. A kernel file that needs one
/// stops compiling (`#error`) when its launcher forgets it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Define {
    pub name: &'static str,
    pub value: String,
}

impl Define {
    pub fn new(name: &'static str, value: impl fmt::Display) -> Self {
        Define {
            name,
            value: value.to_string(),
        }
    }
}

/// The runtime's self-test kernel.
pub const SELFTEST: KernelSource = KernelSource {
    name: "selftest.cu",
    source: include_str!("../../kernels/selftest.cu"),
};

/// Types and warp/block scans every kernel file uses, compiled in front of each one.
const COMMON: &str = include_str!("../../kernels/common.cuh");

/// The environment variable naming the devices colzip uses, as CUDA ordinals
/// (`COLZIP_GPUS=0,1`; `all`, the default, for every device).
pub const GPUS_ENV: &str = "COLZIP_GPUS";

/// What `colzip gpu` reports of a device.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceInfo {
    /// The CUDA ordinal.
    pub ordinal: usize,
    pub name: String,
    pub compute_capability: String,
    pub memory_bytes: u64,
    pub multiprocessors: i32,
    /// Shared memory one block may use when it opts in, in bytes.
    pub shared_memory_per_block: usize,
}

/// How a kernel file came to be loaded, for `colzip gpu` and the tests of the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelOrigin {
    /// Compiled by NVRTC in this process.
    Compiled,
    /// Read from the on-disk cache.
    Cached,
}

type ModuleKey = (&'static str, Vec<Define>);
type LoadedModule = (Arc<CudaModule>, KernelOrigin);
/// A module's key and the function's name.
type FunctionKey = (&'static str, Vec<Define>, String);

/// The device memory colzip holds on a GPU ([`Gpu::memory_use`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct MemoryUse {
    /// Bytes held now (buffers kept by lanes and those in use).
    pub held: usize,
    /// The most held at once since the GPU opened or [`Gpu::reset_memory_peak`].
    pub peak: usize,
    /// The limit ([`GPU_MEMORY_ENV`](super::GPU_MEMORY_ENV) or [`Gpu::set_memory_limit`]), if any.
    pub limit: Option<usize>,
}

/// One GPU of this process.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    info: DeviceInfo,
    arch: String,
    /// NVRTC's and the driver's versions, part of every cache key.
    toolchain: String,
    cache: KernelCache,
    /// Each kernel build's module, once loaded; a cell per build (see
    /// [`Self::module_with_origin`]).
    modules: Mutex<HashMap<ModuleKey, Arc<Mutex<Option<LoadedModule>>>>>,
    /// Whether [`Self::warm_up`] has run.
    warming: AtomicBool,
    /// Functions already looked up: a launch then costs no module lock and no driver call
    /// before the launch itself.
    functions: RwLock<HashMap<FunctionKey, CudaFunction>>,
    lanes: Arc<LanePool>,
}

static GPUS: OnceLock<std::result::Result<Vec<Gpu>, String>> = OnceLock::new();

impl Gpu {
    /// The process's first GPU (the first of [`Gpu::all`]), opened on first call; the
    /// same error every time when unusable.
    pub fn get() -> GpuResult<&'static Gpu> {
        Ok(&Gpu::all()?[0])
    }

    /// Whether this process has opened its GPUs (and found at least one), without
    /// opening them.
    pub fn opened() -> bool {
        GPUS.get().is_some_and(|gpus| gpus.is_ok())
    }

    /// Every GPU this process uses (at least one): all devices, or those [`GPUS_ENV`]
    /// names, opened on first call; the same error every time when none is usable.
    /// Batches split across them; the bytes written do not depend on how many there are.
    pub fn all() -> GpuResult<&'static [Gpu]> {
        GPUS.get_or_init(|| {
            let gpus = Gpu::open_all();
            crate::trace::line(|| match &gpus {
                Ok(gpus) => format!(
                    "GPUs opened: {}",
                    gpus.iter()
                        .map(|g| format!("{} {}", g.info.ordinal, g.info.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Err(reason) => format!("no GPU: {reason}"),
            });
            gpus
        })
        .as_ref()
        .map(Vec::as_slice)
        .map_err(|reason| GpuError::Unavailable(format!("no usable GPU: {reason}")))
    }

    fn open_all() -> std::result::Result<Vec<Gpu>, String> {
        // SAFETY: these only try to load the shared libraries.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err("no CUDA driver (libcuda) found".into());
        }
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return Err("no NVRTC library (libnvrtc) found".into());
        }
        // cudarc panics in a few places when the driver is unusable; keep that an error.
        let count = std::panic::catch_unwind(CudaContext::device_count)
            .map_err(|_| "the CUDA driver failed while counting devices".to_string())?
            .map_err(|e| format!("cannot count CUDA devices: {e}"))?;
        if count < 1 {
            return Err("no CUDA device".to_string());
        }
        let ordinals = chosen_ordinals(std::env::var(GPUS_ENV).ok().as_deref(), count as usize)?;
        ordinals.into_iter().map(Gpu::open).collect()
    }

    fn open(ordinal: usize) -> std::result::Result<Gpu, String> {
        let memory_limit = MemoryBudget::limit_from_env()?;
        // cudarc panics in a few places when the driver is unusable; keep that an error.
        std::panic::catch_unwind(|| {
            use cudarc::driver::sys::CUdevice_attribute as Attribute;
            let ctx = CudaContext::new(ordinal)
                .map_err(|e| format!("cannot open CUDA device {ordinal}: {e}"))?;
            // cudarc's event tracking makes every use of a device buffer two driver calls
            // (wait for its last write, record this read or write): several hundred per
            // selection call, which concurrent lanes then queue for on the driver's lock.
            // SAFETY: colzip orders its streams itself. A lane's device buffers are used
            // and freed on the lane's one stream only. The buffers several streams share
            // are synchronised explicitly: resident columns are uploaded and synchronised
            // before any lane reads them, are never written again, and are freed only when
            // no scan holds them (a selection synchronises before it returns); the bwt
            // steps' shared input is ordered by events of their own. Host copies use
            // plain slices, ordered by the callers' synchronisation as before.
            unsafe { ctx.disable_event_tracking() };
            // The memory query reads the calling thread's current context.
            ctx.bind_to_thread().map_err(|e| e.to_string())?;
            let (major, minor) = ctx.compute_capability().map_err(|e| e.to_string())?;
            let name = ctx.name().map_err(|e| e.to_string())?;
            let attribute = |a| ctx.attribute(a).map_err(|e| e.to_string());
            let multiprocessors = attribute(Attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
            let shared_memory_per_block =
                attribute(Attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?
                    as usize;
            let memory_bytes = cudarc::driver::result::mem_get_info()
                .map(|(_, total)| total as u64)
                .unwrap_or(0);
            Ok(Gpu {
                ctx,
                info: DeviceInfo {
                    ordinal,
                    name,
                    compute_capability: format!("{major}.{minor}"),
                    memory_bytes,
                    multiprocessors,
                    shared_memory_per_block,
                },
                arch: format!("sm_{major}{minor}"),
                toolchain: toolchain_versions(),
                cache: KernelCache::from_env(),
                modules: Mutex::new(HashMap::new()),
                warming: AtomicBool::new(false),
                functions: RwLock::new(HashMap::new()),
                lanes: Arc::new(LanePool::new(memory_limit)),
            })
        })
        .unwrap_or_else(|_| {
            Err(format!(
                "the CUDA driver failed while opening device {ordinal}"
            ))
        })
    }

    /// The device's name, compute capability, memory and SM count.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    pub(crate) fn lanes(&self) -> &Arc<LanePool> {
        &self.lanes
    }

    /// Limits the device memory colzip holds on this GPU (`None`: no limit), as
    /// [`GPU_MEMORY_ENV`](super::GPU_MEMORY_ENV) does when the GPU opens. Idle lanes
    /// give their buffers back at once; buffers in use stay until they are given back.
    /// Later allocations past the limit free idle lanes' buffers first, then fail with
    /// [`GpuError::OutOfMemory`].
    pub fn set_memory_limit(&self, limit: Option<usize>) {
        self.lanes.budget.set_limit(limit);
        self.lanes.free_idle_buffers();
    }

    /// The device memory colzip holds, its peak and limit.
    pub fn memory_use(&self) -> MemoryUse {
        let budget = &self.lanes.budget;
        MemoryUse {
            held: budget.held(),
            peak: budget.peak(),
            limit: budget.limit(),
        }
    }

    /// Starts [`MemoryUse::peak`] again from what is held now.
    pub fn reset_memory_peak(&self) {
        self.lanes.budget.reset_peak();
    }

    /// Input bytes per pipeline step on this GPU: [`step_bytes`], made smaller under a
    /// memory limit so that the pipeline's lanes fit in it (a column larger than the limit
    /// then runs in more steps).
    pub fn step_bytes(&self) -> usize {
        // The hungriest pipeline (gmatch compression) holds about 10 bytes per input byte
        // of a step on each of its lanes; leave room for the idle lanes of other callers.
        const SHARE: usize = 16 * PIPELINE_LANES;
        const GRAIN: usize = 64 << 10;
        let default = step_bytes();
        match self.lanes.budget.limit() {
            Some(limit) => (limit / SHARE / GRAIN * GRAIN).clamp(GRAIN, default),
            None => default,
        }
    }

    /// The CUDA context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// A new stream: one per concurrent caller, so that callers overlap.
    pub fn stream(&self) -> GpuResult<Arc<CudaStream>> {
        self.ctx
            .new_stream()
            .map_err(|e| GpuError::driver("cannot create a stream", e))
    }

    /// `kernel` compiled with `defines` for this device (once per process: from the disk
    /// cache, else by NVRTC) and loaded.
    pub fn module(&self, kernel: &KernelSource, defines: &[Define]) -> GpuResult<Arc<CudaModule>> {
        Ok(self.module_with_origin(kernel, defines)?.0)
    }

    /// [`Self::module`], and whether it was compiled here or read from the disk cache.
    pub fn module_with_origin(
        &self,
        kernel: &KernelSource,
        defines: &[Define],
    ) -> GpuResult<(Arc<CudaModule>, KernelOrigin)> {
        let key: ModuleKey = (kernel.name, defines.to_vec());
        // The map is locked only to find the kernel's own cell: kernels compile in
        // parallel on the threads that need them, and a thread waits only for the kernel
        // it needs (NVRTC takes seconds for some).
        let cell = self
            .modules
            .lock()
            .map_err(poisoned)?
            .entry(key)
            .or_default()
            .clone();
        let mut module = cell.lock().map_err(poisoned)?;
        if let Some(found) = module.as_ref() {
            return Ok(found.clone());
        }
        let (source, options) = compile_inputs(kernel, defines, &self.arch);
        let cache_key = KernelCache::key(&[
            source.as_bytes(),
            options.join(" ").as_bytes(),
            self.toolchain.as_bytes(),
        ]);
        let load = |cubin: Vec<u8>| self.ctx.load_module(Ptx::from_binary(cubin));
        let loaded = match self.cache.load(&cache_key).map(load) {
            Some(Ok(module)) => (module, KernelOrigin::Cached),
            // Not cached, or an entry the driver refuses: compile (and replace it).
            _ => {
                let cubin = compile_cubin(kernel.name, &source, &options)?;
                self.cache.store(&cache_key, &cubin);
                let module = load(cubin)
                    .map_err(|e| GpuError::driver(format!("cannot load {}", kernel.name), e))?;
                (module, KernelOrigin::Compiled)
            }
        };
        *module = Some(loaded.clone());
        Ok(loaded)
    }

    /// Compiles (or reads from the disk cache) `builds` on background threads, so that
    /// the calls that need them later find them loaded. Failures are left for those calls
    /// to report. Once per process and device; later calls do nothing.
    pub fn warm_up(&'static self, builds: Vec<(KernelSource, Vec<Define>)>) {
        if self.warming.swap(true, Ordering::Relaxed) {
            return;
        }
        let threads = std::thread::available_parallelism()
            .map_or(2, |n| n.get() / 2)
            .clamp(1, 8)
            .min(builds.len());
        let builds = Arc::new(builds);
        let next = Arc::new(AtomicUsize::new(0));
        for _ in 0..threads {
            let (builds, next) = (builds.clone(), next.clone());
            let spawned = std::thread::Builder::new()
                .name("colzip-kernels".into())
                .spawn(move || {
                    while let Some((kernel, defines)) =
                        builds.get(next.fetch_add(1, Ordering::Relaxed))
                    {
                        let started = std::time::Instant::now();
                        let origin = self.module_with_origin(kernel, defines).map(|m| m.1);
                        crate::trace::line(|| {
                            format!(
                                "kernel warm-up: {} {origin:?} in {:.3} s",
                                kernel.name,
                                started.elapsed().as_secs_f64()
                            )
                        });
                    }
                });
            // Without a thread the kernels compile when first needed, as before.
            drop(spawned);
        }
    }

    /// The kernel `function` of `kernel`'s file compiled with `defines`.
    pub fn function(
        &self,
        kernel: &KernelSource,
        defines: &[Define],
        function: &str,
    ) -> GpuResult<CudaFunction> {
        let key: FunctionKey = (kernel.name, defines.to_vec(), function.to_string());
        if let Ok(functions) = self.functions.read()
            && let Some(found) = functions.get(&key)
        {
            return Ok(found.clone());
        }
        let found = self
            .module(kernel, defines)?
            .load_function(function)
            .map_err(|e| GpuError::driver(format!("no kernel {function} in {}", kernel.name), e))?;
        if let Ok(mut functions) = self.functions.write() {
            functions.insert(key, found.clone());
        }
        Ok(found)
    }

    /// Runs the self-test kernel over `len` bytes and checks the result on the host.
    pub fn self_test(&self, len: usize) -> GpuResult<()> {
        use cudarc::driver::{LaunchConfig, PushKernelArg};
        let n = u32::try_from(len)
            .map_err(|_| GpuError::Limit("self-test length exceeds u32".into()))?;
        let function = self.function(&SELFTEST, &[], "colzip_selftest")?;
        let stream = self.stream()?;
        let input: Vec<u8> = (0..len).map(|i| (i * 7 + i / 256) as u8).collect();
        let device_in = stream
            .clone_htod(&input)
            .map_err(|e| GpuError::driver("copy to device", e))?;
        let mut device_out = stream
            .alloc_zeros::<u8>(len.max(1))
            .map_err(|e| GpuError::driver("device allocation", e))?;
        let key = 0x5au8;
        let mut launch = stream.launch_builder(&function);
        launch
            .arg(&device_in)
            .arg(&mut device_out)
            .arg(&n)
            .arg(&key);
        // SAFETY: the kernel reads n bytes of `device_in` and writes n bytes of `device_out`,
        // both at least n bytes long, and checks i < n.
        unsafe { launch.launch(LaunchConfig::for_num_elems(n.max(1))) }
            .map_err(|e| GpuError::driver("launch", e))?;
        let output = stream
            .clone_dtoh(&device_out)
            .map_err(|e| GpuError::driver("copy to host", e))?;
        let expected: Vec<u8> = input.iter().map(|b| b ^ key).collect();
        if output[..len] != expected[..] {
            return Err(GpuError::Limit(
                "self-test kernel returned wrong bytes".into(),
            ));
        }
        Ok(())
    }
}

/// `COLZIP_KERNEL_LINEINFO=1` compiles the kernels with line tables (for the sanitizer).
pub const KERNEL_LINEINFO_ENV: &str = "COLZIP_KERNEL_LINEINFO";

/// The full source (the common header in front) and NVRTC's options for `kernel`.
fn compile_inputs(kernel: &KernelSource, defines: &[Define], arch: &str) -> (String, Vec<String>) {
    let mut options = vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".to_string(),
    ];
    // Line tables let compute-sanitizer and profilers name the source line of a report;
    // they change no instruction.
    if std::env::var_os(KERNEL_LINEINFO_ENV).is_some_and(|v| v == "1") {
        options.push("--generate-line-info".to_string());
    }
    options.extend(defines.iter().map(|d| format!("-D{}={}", d.name, d.value)));
    (format!("{COMMON}\n{}", kernel.source), options)
}

/// The ordinals `value` (of [`GPUS_ENV`]) names among `count` devices: all of them when
/// unset, empty or `all`; else a comma-separated list, each at most once.
fn chosen_ordinals(value: Option<&str>, count: usize) -> std::result::Result<Vec<usize>, String> {
    let value = value.map(str::trim).unwrap_or("");
    if value.is_empty() || value.eq_ignore_ascii_case("all") {
        return Ok((0..count).collect());
    }
    let mut ordinals = Vec::new();
    for item in value.split(',') {
        let ordinal: usize = item.trim().parse().map_err(|_| {
            format!(
                "{GPUS_ENV}: '{}' is not a device number (expected e.g. 0,1 or all)",
                item.trim()
            )
        })?;
        if ordinal >= count {
            return Err(format!(
                "{GPUS_ENV}: device {ordinal} does not exist ({count} device{} found)",
                if count == 1 { "" } else { "s" }
            ));
        }
        if ordinals.contains(&ordinal) {
            return Err(format!("{GPUS_ENV}: device {ordinal} is named twice"));
        }
        ordinals.push(ordinal);
    }
    Ok(ordinals)
}

/// Whether NVRTC can be loaded (no driver or device needed to compile).
pub fn nvrtc_available() -> bool {
    // SAFETY: this only tries to load the shared library.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// Compiles `kernel` with `defines` for `arch` (`sm_90`, ...) without a device: how the
/// tests check, on any machine with NVRTC, that every kernel file compiles with the
/// constants its launcher gives.
pub fn compile_kernel(kernel: &KernelSource, defines: &[Define], arch: &str) -> GpuResult<Vec<u8>> {
    let (source, options) = compile_inputs(kernel, defines, arch);
    compile_cubin(kernel.name, &source, &options)
}

/// The error of a lock another thread panicked while holding.
fn poisoned<T>(_: T) -> GpuError {
    GpuError::Limit("kernel module cache poisoned".into())
}

/// Test helper: each of `builds` (a kernel file and its launchers' defines) compiles for
/// the architectures colzip targets; skipped, saying so under `test`'s name, where NVRTC
/// cannot be loaded (CI).
#[cfg(test)]
pub(crate) fn assert_kernels_compile(test: &str, builds: &[(KernelSource, Vec<Define>)]) {
    if !nvrtc_available() {
        eprintln!("{test}: skipped, no NVRTC");
        return;
    }
    for (kernel, defines) in builds {
        for arch in ["sm_80", "sm_90"] {
            let cubin = compile_kernel(kernel, defines, arch)
                .unwrap_or_else(|e| panic!("{} for {arch}: {e}", kernel.name));
            assert!(!cubin.is_empty());
        }
    }
}

/// NVRTC's and the driver's versions (a new toolkit or driver compiles anew).
fn toolchain_versions() -> String {
    let (mut major, mut minor, mut driver) = (0, 0, 0);
    // SAFETY: plain out-parameter queries; a failure leaves the zeros.
    unsafe {
        let _ = cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor);
        let _ = cudarc::driver::sys::cuDriverGetVersion(&mut driver);
    }
    format!("nvrtc {major}.{minor} driver {driver}")
}

/// Compiles `source` to a CUBIN for the architecture in `options`.
fn compile_cubin(name: &str, source: &str, options: &[String]) -> GpuResult<Vec<u8>> {
    use cudarc::nvrtc::{result, sys};
    let compile_error = |log: String| GpuError::Compile {
        kernel: name.to_string(),
        log,
    };
    let source =
        CString::new(source).map_err(|_| compile_error("NUL byte in the source".into()))?;
    let name_c = CString::new(name).map_err(|_| compile_error("NUL byte in the name".into()))?;
    let program =
        result::create_program(&source, Some(&name_c)).map_err(|e| compile_error(e.to_string()))?;
    // SAFETY: `program` was created above and is destroyed once, at the end; `source` and
    // `name_c` outlive it.
    let cubin = unsafe {
        let compiled = result::compile_program(program, options).map_err(|e| {
            let log = result::get_program_log(program)
                .map(|raw| CStr::from_ptr(raw.as_ptr()).to_string_lossy().into_owned())
                .unwrap_or_default();
            compile_error(format!("{e}: {}", log.trim()))
        });
        let cubin = compiled.and_then(|()| {
            let mut size = 0usize;
            sys::nvrtcGetCUBINSize(program, &mut size)
                .result()
                .map_err(|e| compile_error(format!("no CUBIN: {e}")))?;
            let mut cubin = vec![0u8; size];
            sys::nvrtcGetCUBIN(program, cubin.as_mut_ptr().cast())
                .result()
                .map_err(|e| compile_error(format!("no CUBIN: {e}")))?;
            Ok(cubin)
        });
        let _ = result::destroy_program(program);
        cubin
    }?;
    if cubin.is_empty() {
        return Err(compile_error("NVRTC returned an empty CUBIN".into()));
    }
    Ok(cubin)
}

#[cfg(test)]
mod tests {
    use super::chosen_ordinals;

    #[test]
    fn gpus_variable_names_devices_or_all() {
        assert_eq!(chosen_ordinals(None, 2).unwrap(), vec![0, 1]);
        assert_eq!(chosen_ordinals(Some(" all "), 3).unwrap(), vec![0, 1, 2]);
        assert_eq!(chosen_ordinals(Some("1, 0"), 2).unwrap(), vec![1, 0]);
        assert!(
            chosen_ordinals(Some("2"), 2)
                .unwrap_err()
                .contains("device 2 does not exist")
        );
        assert!(
            chosen_ordinals(Some("0,0"), 2)
                .unwrap_err()
                .contains("named twice")
        );
        assert!(
            chosen_ordinals(Some("x"), 2)
                .unwrap_err()
                .contains("'x' is not a device number")
        );
    }
}
