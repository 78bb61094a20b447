//! Statements refused before they run, for what they would do to the process: options the
//! writers would panic on, local COPY targets that would make the object store loop,
//! local Parquet files whose footers DataFusion's reader would panic on, and settings that
//! would take the machine's memory.

use datafusion::logical_expr::LogicalPlan;

use crate::{Error, Result};

/// Checks `plan` before it is executed: an error naming what is wrong, else `Ok`.
pub(super) fn check(plan: &LogicalPlan) -> Result<()> {
    check_copy_options(plan)?;
    check_external_parquet(plan)?;
    check_settings(plan)
}

/// Refuses `CREATE EXTERNAL TABLE … STORED AS PARQUET` over a local file, or a directory's
/// `.parquet` files, whose footer is corrupt: DataFusion's reader panics on some (a
/// metadata length past the file's start, a column chunk of negative start), where the
/// footer check of [`crate::parquet::footer`] names the file and what is wrong.
fn check_external_parquet(plan: &LogicalPlan) -> Result<()> {
    use datafusion::logical_expr::DdlStatement;
    let LogicalPlan::Ddl(DdlStatement::CreateExternalTable(table)) = plan else {
        return Ok(());
    };
    if !table.file_type.eq_ignore_ascii_case("parquet") {
        return Ok(());
    }
    for location in &table.locations {
        let Some(path) = local_path(location) else {
            continue;
        };
        let path = std::path::Path::new(path);
        let files: Vec<std::path::PathBuf> = if path.is_dir() {
            std::fs::read_dir(path)
                .map_err(Error::file("list", path))?
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "parquet"))
                .collect()
        } else if path.is_file() {
            vec![path.to_path_buf()]
        } else {
            continue; // DataFusion says what is missing
        };
        for file in files {
            let opened = std::fs::File::open(&file).map_err(Error::file("open", &file))?;
            crate::parquet::footer::read_metadata(&opened).map_err(|e| {
                Error::format(format!("{}: not a valid Parquet file: {e}", file.display()))
            })?;
        }
    }
    Ok(())
}

/// Refuses a `COPY` whose options the writers would panic on: a row group of 0 rows
/// (`format.max_row_group_size '0'`, which the parquet crate asserts against).
fn check_copy_options(plan: &LogicalPlan) -> Result<()> {
    let LogicalPlan::Copy(copy) = plan else {
        return Ok(());
    };
    check_local_target(&copy.output_url)?;
    for (key, value) in &copy.options {
        let name = key.rsplit('.').next().unwrap_or(key);
        if name == "max_row_group_size" && value.trim().parse::<u64>() == Ok(0) {
            return Err(Error::format(format!(
                "COPY: option '{key}' is 0; a row group holds at least 1 row"
            )));
        }
    }
    Ok(())
}

/// Fails with the path and the reason when a local `COPY` target's directory cannot take
/// a new file. The local object store would otherwise loop forever where creating a file
/// says "not found" in a directory that exists (`/proc/self`): it creates the directory
/// and tries again. Missing directories are created first, as the store would.
fn check_local_target(url: &str) -> Result<()> {
    let Some(path) = local_path(url) else {
        return Ok(());
    };
    let target = std::path::Path::new(path);
    let dir = if path.ends_with('/') {
        target
    } else {
        match target.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => std::path::Path::new("."),
        }
    };
    crate::datafusion::format::dir_takes_files(dir).map_err(|source| Error::File {
        action: "write",
        path: target.to_path_buf(),
        source,
    })
}

/// The local path a statement's URL names (`file://` or no scheme), `None` for other
/// object stores.
fn local_path(url: &str) -> Option<&str> {
    match url.strip_prefix("file://") {
        Some(path) => Some(path),
        None if url.contains("://") => None,
        None => Some(url),
    }
}

/// Refuses a `SET` of the partitions a query runs in to far more than the machine has
/// cores: every partition takes its own buffers, and a million would take tens of GB.
fn check_settings(plan: &LogicalPlan) -> Result<()> {
    use datafusion::logical_expr::{SetVariable, Statement};
    let LogicalPlan::Statement(Statement::SetVariable(SetVariable { variable, value })) = plan
    else {
        return Ok(());
    };
    let name = variable.rsplit('.').next().unwrap_or(variable);
    if name != "target_partitions" {
        return Ok(());
    }
    let most = crate::limits::most_workers();
    match value.trim().parse::<usize>() {
        Ok(n) if n > most => Err(Error::format(format!(
            "SET {variable} = {n}: at most {most} partitions (16 per core of this machine)"
        ))),
        _ => Ok(()),
    }
}
