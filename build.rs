// `sqlx::migrate!` embeds the migrations at compile time; rebuild when any of them changes.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
