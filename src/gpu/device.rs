//! The process's GPU: created on first use, absent (an `Err` saying why, never a panic)
//! when libcuda, libnvrtc or a device is missing. Kernels from `kernels/` are compiled once
//! per process by NVRTC for the device's own compute capability and cached.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaStream, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::{CompileOptions, compile_ptx_with_opts};
use serde::Serialize;

use super::lane::LanePool;
use crate::{Error, Result};

/// A kernel source file, embedded in the binary.
#[derive(Clone, Copy, Debug)]
pub struct KernelSource {
    /// The file's name in `kernels/` (also the cache key).
    pub name: &'static str,
    pub source: &'static str,
}

/// The runtime's self-test kernel.
pub const SELFTEST: KernelSource = KernelSource {
    name: "selftest.cu",
    source: include_str!("../../kernels/selftest.cu"),
};

/// Types and warp/block scans every kernel file uses, compiled in front of each one.
const COMMON: &str = include_str!("../../kernels/common.cuh");

/// What `colzip gpu` reports of the device.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceInfo {
    pub name: String,
    pub compute_capability: String,
    pub memory_bytes: u64,
    pub multiprocessors: i32,
    /// Shared memory one block may use when it opts in, in bytes.
    pub shared_memory_per_block: usize,
}

/// The GPU of this process (device 0).
pub struct Gpu {
    ctx: Arc<CudaContext>,
    info: DeviceInfo,
    arch: String,
    modules: Mutex<HashMap<&'static str, Arc<CudaModule>>>,
    lanes: LanePool,
}

static GPU: OnceLock<std::result::Result<Gpu, String>> = OnceLock::new();

pub(crate) fn gpu_error(what: &str, error: impl std::fmt::Display) -> Error {
    Error::Gpu(format!("{what}: {error}"))
}

impl Gpu {
    /// The process's GPU, opened on first call; the same error every time when unusable.
    pub fn get() -> Result<&'static Gpu> {
        GPU.get_or_init(Gpu::open)
            .as_ref()
            .map_err(|reason| Error::Gpu(reason.clone()))
    }

    fn open() -> std::result::Result<Gpu, String> {
        // SAFETY: these only try to load the shared libraries.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err("no CUDA driver (libcuda) found".into());
        }
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return Err("no NVRTC library (libnvrtc) found".into());
        }
        // cudarc panics in a few places when the driver is unusable; keep that an error.
        std::panic::catch_unwind(|| {
            let count = CudaContext::device_count().map_err(|e| format!("cannot count CUDA devices: {e}"))?;
            if count < 1 {
                return Err("no CUDA device".to_string());
            }
            let ctx = CudaContext::new(0).map_err(|e| format!("cannot open CUDA device 0: {e}"))?;
            let (major, minor) = ctx.compute_capability().map_err(|e| e.to_string())?;
            let name = ctx.name().map_err(|e| e.to_string())?;
            let multiprocessors = ctx
                .attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
                .map_err(|e| e.to_string())?;
            let shared_memory_per_block = ctx
                .attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
                .map_err(|e| e.to_string())? as usize;
            let memory_bytes = cudarc::driver::result::mem_get_info().map(|(_, total)| total as u64).unwrap_or(0);
            Ok(Gpu {
                ctx,
                info: DeviceInfo {
                    name,
                    compute_capability: format!("{major}.{minor}"),
                    memory_bytes,
                    multiprocessors,
                    shared_memory_per_block,
                },
                arch: format!("sm_{major}{minor}"),
                modules: Mutex::new(HashMap::new()),
                lanes: LanePool::default(),
            })
        })
        .unwrap_or_else(|_| Err("the CUDA driver failed while opening the device".into()))
    }

    /// The device's name, compute capability, memory and SM count.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    pub(crate) fn lanes(&self) -> &LanePool {
        &self.lanes
    }

    /// The CUDA context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// A new stream: one per concurrent caller, so that callers overlap.
    pub fn stream(&self) -> Result<Arc<CudaStream>> {
        self.ctx
            .new_stream()
            .map_err(|e| gpu_error("cannot create a stream", e))
    }

    /// `kernel` compiled for this device (once per process) and loaded.
    pub fn module(&self, kernel: &KernelSource) -> Result<Arc<CudaModule>> {
        let mut modules = self
            .modules
            .lock()
            .map_err(|_| Error::Gpu("module cache poisoned".into()))?;
        if let Some(module) = modules.get(kernel.name) {
            return Ok(module.clone());
        }
        let options = CompileOptions {
            options: vec![
                format!("--gpu-architecture={}", self.arch),
                "--std=c++17".into(),
            ],
            name: Some(kernel.name.into()),
            ..Default::default()
        };
        let source = format!("{COMMON}\n{}", kernel.source);
        let ptx = compile_ptx_with_opts(source, options)
            .map_err(|e| gpu_error(&format!("NVRTC cannot compile {}", kernel.name), e))?;
        let module = self
            .ctx
            .load_module(ptx)
            .map_err(|e| gpu_error(&format!("cannot load {}", kernel.name), e))?;
        modules.insert(kernel.name, module.clone());
        Ok(module)
    }

    /// The kernel `function` of `kernel`'s file.
    pub fn function(&self, kernel: &KernelSource, function: &str) -> Result<CudaFunction> {
        self.module(kernel)?
            .load_function(function)
            .map_err(|e| gpu_error(&format!("no kernel {function} in {}", kernel.name), e))
    }

    /// Runs the self-test kernel over `len` bytes and checks the result on the host.
    pub fn self_test(&self, len: usize) -> Result<()> {
        let n = u32::try_from(len).map_err(|_| Error::format("self-test length exceeds u32"))?;
        let module = self.module(&SELFTEST)?;
        let function = module
            .load_function("colzip_selftest")
            .map_err(|e| gpu_error("no selftest kernel", e))?;
        let stream = self.stream()?;
        let input: Vec<u8> = (0..len).map(|i| (i * 7 + i / 256) as u8).collect();
        let device_in = stream
            .clone_htod(&input)
            .map_err(|e| gpu_error("copy to device", e))?;
        let mut device_out = stream
            .alloc_zeros::<u8>(len.max(1))
            .map_err(|e| gpu_error("device allocation", e))?;
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
            .map_err(|e| gpu_error("launch", e))?;
        let output = stream
            .clone_dtoh(&device_out)
            .map_err(|e| gpu_error("copy to host", e))?;
        let expected: Vec<u8> = input.iter().map(|b| b ^ key).collect();
        if output[..len] != expected[..] {
            return Err(Error::Gpu("self-test kernel returned wrong bytes".into()));
        }
        Ok(())
    }
}
