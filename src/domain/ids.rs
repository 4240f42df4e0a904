//! Prefixed, time-sortable identifiers (guide: "Conventions"): `act_`, `src_`, `usr_`, … + a ULID.

/// A new id such as `act_01JD8X…`. ULIDs sort by creation time.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", ulid::Ulid::new())
}

pub const ACTION: &str = "act";
pub const SOURCE: &str = "src";
pub const USER: &str = "usr";
pub const WORKSPACE: &str = "ws";
pub const RECEIPT: &str = "rcp";
pub const TOKEN: &str = "tok";
pub const SESSION: &str = "ses";
pub const INVITATION: &str = "inv";
pub const COMMENT: &str = "cmt";
pub const DELIVERY: &str = "msg";
pub const CONTROL_REQUEST: &str = "ctr";
pub const CONTEXT_REQUEST: &str = "cxr";
pub const MAIL: &str = "mail";
