//! colzip's extension codecs for distributed plans: [`LogicalCodec`] and
//! [`PhysicalCodec`] carry colzip's functions, the `colzip_stats` table and its scan
//! ([`StatsExec`], whose children are the measured table's own scans), and the
//! `COLZIP_PARQUET` format and writer from the client to the scheduler and from the
//! scheduler to the executors, so the processes at the other end need not have them
//! registered. Everything else goes to Ballista's own codecs, which they wrap.
//!
//! colzip's payloads start with [`MAGIC`] (a byte no protobuf message of Ballista's
//! starts with) followed by a JSON [`Payload`].

use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;

use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use datafusion::catalog::TableProvider;
use datafusion::common::{DataFusionError, Result, TableReference};
use datafusion::config::TableParquetOptions;
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::datasource::file_format::parquet::ParquetFormatFactory;
use datafusion::datasource::physical_plan::FileSinkConfig;
use datafusion::datasource::sink::DataSinkExec;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{AggregateUDF, Extension, LogicalPlan, ScalarUDF};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use datafusion_proto::protobuf;
use prost::Message;
use serde::{Deserialize, Serialize};

use crate::datafusion::format::{ColzipParquetFactory, ColzipParquetSink, FormatOptions};
use crate::datafusion::functions::{self, StatsExec, StatsScanParts, StatsTableParts};
use crate::gpu::Backend;

/// The first bytes of every payload of colzip's codecs.
pub const MAGIC: &[u8] = b"COLZIP\x01";

/// What colzip's codecs write after [`MAGIC`].
#[derive(Debug, Serialize, Deserialize)]
enum Payload {
    /// A colzip scalar function or aggregate (the name is carried by the plan).
    Function { backend: String },
    /// The `COLZIP_PARQUET` format of a `COPY`.
    Format,
    /// What `colzip_stats(…)` returned.
    StatsTable {
        name: String,
        reference: [String; 3],
        contenders: Vec<String>,
        backend: String,
    },
    /// A `colzip_stats` scan (its column scans are the plan node's inputs).
    StatsScan {
        table: String,
        contenders: Vec<String>,
        backend: String,
        projection: Option<Vec<usize>>,
    },
    /// A `COLZIP_PARQUET` writer: the sink config and DataFusion's Parquet options as
    /// protobuf, colzip's options as statement options.
    Sink {
        config: Vec<u8>,
        parquet: Vec<u8>,
        format: HashMap<String, String>,
    },
}

fn error(what: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Internal(format!("colzip codec: {what}"))
}

fn write(payload: &Payload, buf: &mut Vec<u8>) -> Result<()> {
    buf.extend_from_slice(MAGIC);
    serde_json::to_writer(buf, payload).map_err(error)
}

/// colzip's payload in `buf`, or `None` when `buf` is someone else's.
fn read(buf: &[u8]) -> Result<Option<Payload>> {
    match buf.strip_prefix(MAGIC) {
        Some(json) => serde_json::from_slice(json).map(Some).map_err(error),
        None => Ok(None),
    }
}

fn backend(text: &str) -> Result<Backend> {
    text.parse().map_err(error)
}

// The function pairs below serve both codecs: each writes or reads colzip's payload
// for colzip's functions and hands anything else to `otherwise` (Ballista's codec).

fn encode_udf(
    udf: &ScalarUDF,
    buf: &mut Vec<u8>,
    otherwise: impl FnOnce(&mut Vec<u8>) -> Result<()>,
) -> Result<()> {
    match functions::scalar_udf_parts(udf) {
        Some((_, backend)) => write_function(backend, buf),
        None => otherwise(buf),
    }
}

fn decode_udf(
    name: &str,
    buf: &[u8],
    otherwise: impl FnOnce() -> Result<Arc<ScalarUDF>>,
) -> Result<Arc<ScalarUDF>> {
    let Some(Payload::Function { backend: b }) = read(buf)? else {
        return otherwise();
    };
    let udf = functions::scalar_udf(name, backend(&b)?)
        .ok_or_else(|| error(format!("no colzip scalar function '{name}'")))?;
    Ok(Arc::new(udf))
}

fn encode_udaf(
    udaf: &AggregateUDF,
    buf: &mut Vec<u8>,
    otherwise: impl FnOnce(&mut Vec<u8>) -> Result<()>,
) -> Result<()> {
    match functions::aggregate_udf_parts(udaf) {
        Some((_, backend)) => write_function(backend, buf),
        None => otherwise(buf),
    }
}

fn decode_udaf(
    name: &str,
    buf: &[u8],
    otherwise: impl FnOnce() -> Result<Arc<AggregateUDF>>,
) -> Result<Arc<AggregateUDF>> {
    let Some(Payload::Function { backend: b }) = read(buf)? else {
        return otherwise();
    };
    let udaf = functions::aggregate_udf(name, backend(&b)?)
        .ok_or_else(|| error(format!("no colzip aggregate '{name}'")))?;
    Ok(Arc::new(udaf))
}

fn write_function(backend: Backend, buf: &mut Vec<u8>) -> Result<()> {
    write(
        &Payload::Function {
            backend: backend.to_string(),
        },
        buf,
    )
}

/// The logical codec: colzip's functions, `colzip_stats` tables and the
/// `COLZIP_PARQUET` format of `COPY`, over Ballista's logical codec.
#[derive(Debug, Default)]
pub struct LogicalCodec {
    inner: BallistaLogicalExtensionCodec,
}

impl LogicalExtensionCodec for LogicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> Result<Extension> {
        self.inner.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: datafusion::arrow::datatypes::SchemaRef,
        ctx: &TaskContext,
    ) -> Result<Arc<dyn TableProvider>> {
        match read(buf)? {
            Some(Payload::StatsTable {
                name,
                reference,
                contenders: c,
                backend: b,
            }) => StatsTableParts {
                name,
                reference,
                contenders: c,
                backend: backend(&b)?,
            }
            .table(),
            Some(other) => Err(error(format!("unexpected table payload {other:?}"))),
            None => self
                .inner
                .try_decode_table_provider(buf, table_ref, schema, ctx),
        }
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        match StatsTableParts::of_table(node.as_ref()) {
            Some(parts) => write(
                &Payload::StatsTable {
                    name: parts.name,
                    reference: parts.reference,
                    contenders: parts.contenders,
                    backend: parts.backend.to_string(),
                },
                buf,
            ),
            None => self.inner.try_encode_table_provider(table_ref, node, buf),
        }
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> Result<Arc<dyn FileFormatFactory>> {
        match read(buf)? {
            Some(Payload::Format) => Ok(Arc::new(ColzipParquetFactory)),
            Some(other) => Err(error(format!("unexpected format payload {other:?}"))),
            None => self.inner.try_decode_file_format(buf, ctx),
        }
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn FileFormatFactory>,
    ) -> Result<()> {
        if (node.as_ref() as &dyn Any).is::<ColzipParquetFactory>() {
            return write(&Payload::Format, buf);
        }
        self.inner.try_encode_file_format(buf, node)
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> Result<Arc<ScalarUDF>> {
        decode_udf(name, buf, || self.inner.try_decode_udf(name, buf))
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> Result<()> {
        encode_udf(node, buf, |buf| self.inner.try_encode_udf(node, buf))
    }

    fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> Result<Arc<AggregateUDF>> {
        decode_udaf(name, buf, || self.inner.try_decode_udaf(name, buf))
    }

    fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> Result<()> {
        encode_udaf(node, buf, |buf| self.inner.try_encode_udaf(node, buf))
    }
}

/// The physical codec: colzip's functions, `colzip_stats` scans and `COLZIP_PARQUET`
/// writers, over Ballista's physical codec (shuffle readers and writers, …).
#[derive(Debug, Default)]
pub struct PhysicalCodec {
    inner: BallistaPhysicalExtensionCodec,
}

impl PhysicalCodec {
    fn encode_sink(&self, plan: &dyn ExecutionPlan, buf: &mut Vec<u8>) -> Result<bool> {
        let Some(exec) = (plan as &dyn Any).downcast_ref::<DataSinkExec>() else {
            return Ok(false);
        };
        let Some(sink) = (exec.sink() as &dyn Any).downcast_ref::<ColzipParquetSink>() else {
            return Ok(false);
        };
        let config = protobuf::FileSinkConfig::try_from(sink.config())?;
        // DataFusion converts Parquet options to protobuf by way of its format factory.
        let factory = ParquetFormatFactory::new_with_options(sink.parquet_options().clone());
        let parquet = protobuf::TableParquetOptions::from(&factory);
        let payload = Payload::Sink {
            config: config.encode_to_vec(),
            parquet: parquet.encode_to_vec(),
            format: sink.format_options().to_map(),
        };
        write(&payload, buf)?;
        Ok(true)
    }

    fn encode_stats_scan(&self, plan: &dyn ExecutionPlan, buf: &mut Vec<u8>) -> Result<bool> {
        let Some(scan) = (plan as &dyn Any).downcast_ref::<StatsExec>() else {
            return Ok(false);
        };
        let parts = scan.parts();
        let payload = Payload::StatsScan {
            table: parts.table.clone(),
            contenders: parts.contenders.clone(),
            backend: parts.backend.to_string(),
            projection: parts.projection.clone(),
        };
        write(&payload, buf)?;
        Ok(true)
    }
}

impl PhysicalExtensionCodec for PhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        match read(buf)? {
            Some(Payload::Sink {
                config,
                parquet,
                format,
            }) => {
                let [input] = inputs else {
                    return Err(error("a COLZIP_PARQUET writer takes one input"));
                };
                let config = protobuf::FileSinkConfig::decode(config.as_slice()).map_err(error)?;
                let config = FileSinkConfig::try_from(&config)?;
                let parquet =
                    protobuf::TableParquetOptions::decode(parquet.as_slice()).map_err(error)?;
                let parquet = TableParquetOptions::try_from(&parquet)?;
                let format = FormatOptions::parse(&format).map_err(error)?;
                let sink = ColzipParquetSink::new(config, parquet, format).map_err(error)?;
                Ok(Arc::new(DataSinkExec::new(
                    Arc::clone(input),
                    Arc::new(sink),
                    None,
                )))
            }
            Some(Payload::StatsScan {
                table,
                contenders: c,
                backend: b,
                projection,
            }) => {
                let parts = StatsScanParts {
                    table,
                    contenders: c,
                    backend: backend(&b)?,
                    projection,
                };
                Ok(Arc::new(StatsExec::try_new(parts, inputs.to_vec())?))
            }
            Some(other) => Err(error(format!("unexpected plan payload {other:?}"))),
            None => self.inner.try_decode(buf, inputs, ctx, proto_converter),
        }
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        if self.encode_sink(node.as_ref(), buf)? {
            return Ok(());
        }
        if self.encode_stats_scan(node.as_ref(), buf)? {
            return Ok(());
        }
        self.inner.try_encode(node, buf, proto_converter)
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> Result<Arc<ScalarUDF>> {
        decode_udf(name, buf, || self.inner.try_decode_udf(name, buf))
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> Result<()> {
        encode_udf(node, buf, |buf| self.inner.try_encode_udf(node, buf))
    }

    fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> Result<Arc<AggregateUDF>> {
        decode_udaf(name, buf, || self.inner.try_decode_udaf(name, buf))
    }

    fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> Result<()> {
        encode_udaf(node, buf, |buf| self.inner.try_encode_udaf(node, buf))
    }
}
