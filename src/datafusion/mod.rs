//! DataFusion integration: SQL functions over compressed columns, compressed in-memory
//! tables, and the `COLZIP_PARQUET` file format for `COPY … TO` and external tables.
//! Each submodule's docs say what it holds.

pub mod format;
pub mod functions;
pub mod parquet_scan;
pub mod session;
pub mod table;

use datafusion::prelude::SessionContext;

/// Registers colzip's SQL functions and the `COLZIP_PARQUET` file format with `ctx`.
pub fn register(ctx: &SessionContext) -> crate::Result<()> {
    functions::register(ctx)?;
    format::register(ctx)
}

/// [`register`] with colzip's functions on `backend` instead of `COLZIP_BACKEND`'s.
pub fn register_on(ctx: &SessionContext, backend: crate::gpu::Backend) -> crate::Result<()> {
    functions::register_on(ctx, backend)?;
    format::register(ctx)
}
