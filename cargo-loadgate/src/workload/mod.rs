//! The user model (a state machine of operations) and the seeded arrival schedule. Pure, no I/O.
