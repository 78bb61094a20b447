//! colzip's build script: it builds nothing. It exists so that `memchr`, built for the
//! host (build scripts and proc-macros), gets its `default` feature in every build, as it
//! does in a build with `--features ballista` (where Ballista's build dependencies ask for
//! it). Host `memchr` reaches the DataFusion tree through psm's build script (`object` →
//! `ar_archive_writer` → psm → stacker → recursive → sqlparser → datafusion-common), so
//! one differing feature there compiled the whole tree twice. See the
//! `same-tree-as-ballista` feature in Cargo.toml.

fn main() {
    println!("cargo::rerun-if-changed=scripts/host-features.rs");
}
