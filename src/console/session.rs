//! Console sessions as signed cookies, and the CSRF tokens bound to them (pure functions).
//!
//! A cookie reads `<base64url(json)>.<base64url(hmac)>`; the JSON names who signed in, when the
//! session ends and a random nonce. The signature alone does not make a session: it must also
//! be held server-side ([`Session::id`], `db::console_sessions`), so sign-out ends it everywhere. Its CSRF token is an HMAC of the nonce, so a page's forms
//! carry a value that only this server, for this session, can produce. The key is the console
//! key of [`crate::state::AppState`], never a receipt key itself.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// The session cookie's name.
pub const COOKIE: &str = "mnemo_console";
/// The cookie that carries the sign-in form's nonce before a session exists.
pub const LOGIN_COOKIE: &str = "mnemo_console_login";

/// Who a session acts for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Who {
    /// The operator key (`MNEMO_API_KEY`); `fp` fingerprints that key, so changing it ends sessions.
    Operator { fp: String },
    /// A stored admin key: bound to its tenant unless it is an operator key.
    Key {
        key_id: String,
        tenant: String,
        #[serde(default)]
        operator: bool,
    },
    /// No key configured: loopback only.
    Open,
}

/// The signed content of a session cookie.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    pub who: Who,
    /// Expiry, unix seconds.
    pub exp: i64,
    /// Random, per sign-in: the CSRF tokens derive from it.
    pub nonce: String,
}

impl Session {
    /// A new session for `who` that ends `minutes` after `now`.
    pub fn new(who: Who, now: i64, minutes: u64) -> Session {
        Session { who, exp: now + (minutes as i64) * 60, nonce: random_token() }
    }

    /// What the header shows about the signed-in identity (never a secret).
    pub fn label(&self) -> String {
        match &self.who {
            Who::Operator { .. } => "operator key".into(),
            Who::Key { key_id, operator: true, .. } => format!("operator key {key_id}"),
            Who::Key { key_id, tenant, .. } => format!("admin key {key_id} ({tenant} only)"),
            Who::Open => "open mode (loopback)".into(),
        }
    }

    /// The one tenant this session may see, or None for every tenant (operator or open mode).
    pub fn bound_tenant(&self) -> Option<&str> {
        match &self.who {
            Who::Key { tenant, operator: false, .. } => Some(tenant),
            _ => None,
        }
    }

    /// Whether this session may see and change the tenant's pages.
    pub fn may_act_on(&self, tenant: &str) -> bool {
        self.bound_tenant().is_none_or(|t| t == tenant)
    }

    /// The tenant whose rows hold this session server-side: the key's tenant,
    /// else `default` (the operator key and open mode belong to no tenant).
    pub fn home_tenant(&self) -> &str {
        match &self.who {
            Who::Key { tenant, .. } => tenant,
            _ => crate::model::text::DEFAULT_TENANT,
        }
    }

    /// The server-side id of this session: sha256 of its nonce (the row never holds the cookie).
    pub fn id(&self) -> [u8; 32] {
        use sha2::Digest as _;
        Sha256::digest(self.nonce.as_bytes()).into()
    }

    /// The CSRF token of this session's forms.
    pub fn csrf(&self, key: &[u8]) -> String {
        mac_hex(key, &["csrf", &self.nonce])
    }
}

/// 32 random bytes, base64url.
pub fn random_token() -> String {
    let mut b = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut b);
    URL_SAFE_NO_PAD.encode(b)
}

fn mac(key: &[u8], parts: &[&str]) -> Vec<u8> {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).unwrap_or_else(|_| unreachable!());
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            m.update(b"\x1f");
        }
        m.update(p.as_bytes());
    }
    m.finalize().into_bytes().to_vec()
}

/// Hex HMAC-SHA256 of the parts joined by 0x1f.
pub fn mac_hex(key: &[u8], parts: &[&str]) -> String {
    hex::encode(mac(key, parts))
}

/// Constant-time equality of two tokens.
pub fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// The cookie value of a session.
pub fn seal(key: &[u8], s: &Session) -> String {
    let json = serde_json::to_vec(s).unwrap_or_default();
    let body = URL_SAFE_NO_PAD.encode(json);
    let sig = URL_SAFE_NO_PAD.encode(mac(key, &["session", &body]));
    format!("{body}.{sig}")
}

/// The session a cookie value carries, if its signature holds and it has not expired at `now`.
pub fn open(key: &[u8], value: &str, now: i64) -> Option<Session> {
    let (body, sig) = value.split_once('.')?;
    let expected = URL_SAFE_NO_PAD.encode(mac(key, &["session", body]));
    if !same(sig, &expected) {
        return None;
    }
    let s: Session = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(body).ok()?).ok()?;
    (s.exp > now).then_some(s)
}

/// The sign-in form's token for a login nonce.
pub fn login_token(key: &[u8], nonce: &str) -> String {
    mac_hex(key, &["login", nonce])
}

/// The value of cookie `name` in a `Cookie` header.
pub fn cookie<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').map(str::trim).find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
}

/// A `Set-Cookie` value: HttpOnly, SameSite=Strict, path-scoped to the console, `Secure` over https.
pub fn set_cookie(name: &str, value: &str, max_age_secs: i64, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{name}={value}; Path=/admin/ui; HttpOnly; SameSite=Strict; Max-Age={max_age_secs}{secure}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

    #[test]
    fn a_sealed_session_opens_until_it_expires_and_not_after_tampering() {
        let s = Session::new(Who::Key { key_id: "k1".into(), tenant: "acme".into(), operator: false }, 1000, 10);
        let v = seal(KEY, &s);
        assert_eq!(open(KEY, &v, 1000), Some(s.clone()));
        assert_eq!(open(KEY, &v, 1000 + 600), None, "expired");
        assert_eq!(open(b"another key, also 32 bytes long!", &v, 1000), None);
        // Changing the body (e.g. to another key id) breaks the signature.
        let forged = Session { who: Who::Open, ..s.clone() };
        let (forged_body, _) = seal(KEY, &forged).split_once('.').map(|(b, _)| (b.to_string(), ())).unwrap();
        let (_, sig) = v.split_once('.').unwrap();
        assert_eq!(open(KEY, &format!("{forged_body}.{sig}"), 1000), None);
        assert_eq!(open(KEY, "garbage", 1000), None);
    }

    #[test]
    fn admin_key_sessions_are_bound_to_their_tenant_and_operators_are_not() {
        let admin = Session::new(Who::Key { key_id: "k1".into(), tenant: "acme".into(), operator: false }, 0, 10);
        assert!(admin.may_act_on("acme") && !admin.may_act_on("globex"));
        let op = Session::new(Who::Key { key_id: "k2".into(), tenant: "acme".into(), operator: true }, 0, 10);
        assert!(op.may_act_on("globex"));
        assert!(Session::new(Who::Operator { fp: "f".into() }, 0, 10).may_act_on("globex"));
        assert!(Session::new(Who::Open, 0, 10).may_act_on("globex"));
    }

    #[test]
    fn sessions_are_held_under_their_keys_tenant_by_a_digest_of_their_nonce() {
        let a = Session::new(Who::Key { key_id: "k1".into(), tenant: "acme".into(), operator: true }, 0, 10);
        let b = Session::new(Who::Operator { fp: "f".into() }, 0, 10);
        assert_eq!((a.home_tenant(), b.home_tenant()), ("acme", "default"));
        assert_ne!(a.id(), b.id());
        assert!(!a.id().iter().zip(a.nonce.as_bytes()).all(|(x, y)| x == y), "not the nonce itself");
    }

    #[test]
    fn csrf_tokens_are_per_session_and_compared_exactly() {
        let a = Session::new(Who::Open, 0, 10);
        let b = Session::new(Who::Open, 0, 10);
        assert_ne!(a.csrf(KEY), b.csrf(KEY));
        assert!(same(&a.csrf(KEY), &a.csrf(KEY)));
        assert!(!same(&a.csrf(KEY), &b.csrf(KEY)));
        assert!(!same(&a.csrf(KEY), ""));
        assert_ne!(login_token(KEY, &a.nonce), a.csrf(KEY), "login and session tokens differ");
    }

    #[test]
    fn cookies_are_read_by_exact_name_and_set_strict() {
        let h = "a=1; mnemo_console_login=x; mnemo_console=abc.def";
        assert_eq!(cookie(h, COOKIE), Some("abc.def"));
        assert_eq!(cookie(h, LOGIN_COOKIE), Some("x"));
        assert_eq!(cookie(h, "mnemo"), None);
        let c = set_cookie(COOKIE, "v", 60, true);
        assert!(c.contains("HttpOnly") && c.contains("SameSite=Strict") && c.ends_with("; Secure"));
        assert!(!set_cookie(COOKIE, "v", 60, false).contains("Secure"));
    }
}
