//! Ids of new rows: time-ordered ULIDs carried in UUIDs (DESIGN.md §3).

use std::sync::Mutex;

use uuid::Uuid;

static IDS: Mutex<ulid::Generator> = Mutex::new(ulid::Generator::new());

/// A new time-ordered id (a ULID carried in a UUID), strictly increasing within this process
/// so rows written in one transaction (same `now()`) keep their input order.
pub fn new_id() -> Uuid {
    let mut guard = match IDS.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    };
    let generated = guard.generate();
    // Overflow within one millisecond (2^80 ids) cannot happen in practice; fall back to random.
    Uuid::from(generated.unwrap_or_else(|_| ulid::Ulid::new()))
}
