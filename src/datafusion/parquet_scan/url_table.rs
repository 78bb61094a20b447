//! Tables named by their path (`SELECT … FROM 'dir/*.parquet'`), as DataFusion's
//! `SessionContext::enable_url_table` makes them, except that Parquet paths are read by
//! colzip's scan (the `COLZIP_PARQUET` format) instead of DataFusion's stock reader.
//! `.czip` archives are [`CompressedTable`]s (held compressed as the archive stores
//! them). Other files (CSV, JSON, Arrow, Avro) are read as DataFusion reads them.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{DynamicFileCatalog, TableProvider, UrlTableFactory};
use datafusion::common::plan_datafusion_err;
use datafusion::datasource::dynamic_file::DynamicListTableFactory;
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::datasource::listing::{
    ListingTable, ListingTableConfig, ListingTableConfigExt, ListingTableUrl,
};
use datafusion::execution::context::SessionState;
use datafusion::prelude::SessionContext;

use crate::column::CodecChoice;
use crate::datafusion::format::ColzipParquetFactory;
use crate::datafusion::table::{CompressOptions, CompressedTable};

/// `ctx` with tables by path, Parquet ones read by colzip's scan (pages decompressed in
/// batched calls, on the GPU when there is one). `colzip sql`'s sessions use it
/// (through [`crate::datafusion::session::context`]).
pub fn enable_url_tables(ctx: SessionContext) -> SessionContext {
    let current = Arc::clone(ctx.state_ref().read().catalog_list());
    let factory = Arc::new(ColzipUrlTableFactory::default());
    let catalogs = Arc::new(DynamicFileCatalog::new(
        current,
        Arc::clone(&factory) as Arc<dyn UrlTableFactory>,
    ));
    let session_id = ctx.session_id();
    let ctx: SessionContext = ctx
        .into_state_builder()
        .with_session_id(session_id)
        .with_catalog_list(catalogs)
        .build()
        .into();
    factory
        .inner
        .session_store()
        .with_state(ctx.state_weak_ref());
    ctx
}

/// The table of a local `.czip` archive (held compressed as stored, decoded by the scans
/// on the backend `COLZIP_BACKEND` names), or `None` for other names.
fn archive_table(url: &str) -> datafusion::common::Result<Option<Arc<dyn TableProvider>>> {
    let path = std::path::Path::new(url.strip_prefix("file://").unwrap_or(url));
    if path.extension().is_none_or(|e| e != "czip") || !path.is_file() {
        return Ok(None);
    }
    let partitions = std::thread::available_parallelism().map_or(1, |n| n.get());
    let table = CompressOptions::from_env(CodecChoice::Auto)
        .and_then(|options| CompressedTable::from_archive(path, partitions, &options))
        .map_err(|e| plan_datafusion_err!("{e}"))?;
    Ok(Some(Arc::new(table)))
}

/// Makes tables of paths; Parquet through colzip's format, `.czip` archives as
/// [`CompressedTable`]s.
#[derive(Debug, Default)]
struct ColzipUrlTableFactory {
    /// DataFusion's factory, for its session store (it holds the session weakly).
    inner: DynamicListTableFactory,
}

#[async_trait]
impl UrlTableFactory for ColzipUrlTableFactory {
    async fn try_new(
        &self,
        url: &str,
    ) -> datafusion::common::Result<Option<Arc<dyn TableProvider>>> {
        if let Some(table) = archive_table(url)? {
            return Ok(Some(table));
        }
        let Ok(table_url) = ListingTableUrl::parse(url) else {
            return Ok(None);
        };
        let state = self
            .inner
            .session_store()
            .get_session()
            .upgrade()
            .and_then(|session| {
                session
                    .read()
                    .as_any()
                    .downcast_ref::<SessionState>()
                    .cloned()
            })
            .ok_or_else(|| plan_datafusion_err!("the session of a path table is gone"))?;
        // As DataFusion does: a name that is not a readable path is not a table.
        let Ok(mut config) = ListingTableConfig::new(table_url)
            .infer_options(&state)
            .await
        else {
            return Ok(None);
        };
        if let Some(options) = config.options.as_mut()
            && options.format.get_ext() == "parquet"
        {
            options.format = ColzipParquetFactory.create(&state, &HashMap::new())?;
        }
        let config = config
            .infer_partitions_from_path(&state)
            .await?
            .infer_schema(&state)
            .await?;
        Ok(Some(Arc::new(ListingTable::try_new(config)?)))
    }
}
