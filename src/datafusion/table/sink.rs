//! `INSERT INTO` a compressed table: the inserted rows are compressed like the table's
//! own, in blocks, and appended round robin over its partitions.

use std::fmt;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::datasource::sink::DataSink;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, SendableRecordBatchStream};
use futures::TryStreamExt;

use super::CompressedTable;

pub(super) struct CompressedSink {
    table: Arc<CompressedTable>,
}

impl CompressedSink {
    pub(super) fn new(table: CompressedTable) -> Self {
        CompressedSink {
            table: Arc::new(table),
        }
    }
}

impl fmt::Debug for CompressedSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompressedSink").finish()
    }
}

impl DisplayAs for CompressedSink {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CompressedTable (partitions={})",
            self.table.partition_count()
        )
    }
}

#[async_trait]
impl DataSink for CompressedSink {
    fn schema(&self) -> &SchemaRef {
        &self.table.schema
    }

    async fn write_all(
        &self,
        data: SendableRecordBatchStream,
        _context: &Arc<TaskContext>,
    ) -> Result<u64> {
        let batches: Vec<_> = data.try_collect().await?;
        let table = self.table.clone();
        // Compression is CPU (or GPU) work for the rayon pool, not for the async workers.
        let rows = tokio::task::spawn_blocking(move || table.insert_batches(batches))
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?
            .map_err(DataFusionError::from)?;
        Ok(rows as u64)
    }
}
