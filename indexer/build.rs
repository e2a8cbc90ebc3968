//! Rebuilds the indexer when its migrations change.

// `sqlx::migrate!` embeds the migrations when this crate compiles; a new
// file in the folder must compile it again.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
