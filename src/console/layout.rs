//! The page frame (header, navigation, sign-out) and small rendering helpers.

use chrono::{DateTime, Utc};
use maud::{html, Markup, DOCTYPE};

use super::{seg, Ctx};

/// The document head; the doctype is written by [`document`], before `<html>`.
fn head(title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { (title) " · mnemo console" }
            link rel="stylesheet" href="/admin/ui/assets/console.css";
            script src="/admin/ui/assets/console.js" defer {}
        }
    }
}

/// A whole document: the doctype first (anything before it puts browsers in quirks mode).
fn document(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            (body)
        }
    }
}

/// A page without navigation (sign-in, errors).
pub fn bare(title: &str, body: Markup) -> Markup {
    document(title, html! { body { main id="main" { (body) } } })
}

/// The hidden CSRF field every state-changing form carries.
pub fn csrf(ctx: &Ctx) -> Markup {
    html! { input type="hidden" name="csrf" value=(ctx.csrf); }
}

/// A signed-in page: header with the identity and sign-out, tenant navigation when a tenant is chosen.
pub fn page(ctx: &Ctx, tenant: Option<&str>, title: &str, body: Markup) -> Markup {
    document(
        title,
        html! {
            body {
                a.skip href="#main" { "Skip to content" }
                header {
                    nav aria-label="Console" {
                        a.brand href="/admin/ui/tenants" { "mnemo" }
                        a href="/admin/ui/tenants" { "Tenants" }
                        @if let Some(t) = tenant {
                            @let base = format!("/admin/ui/t/{}", seg(t));
                            span.tenant title="tenant" { (t) }
                            a href={ (base) "/subjects" } { "Subjects" }
                            a href={ (base) "/keys" } { "API keys" }
                            a href={ (base) "/config" } { "Config & policy" }
                            a href={ (base) "/labels" } { "Label review" }
                            a href={ (base) "/jobs" } { "Compile jobs" }
                        }
                        @if ctx.session.bound_tenant().is_none() { a href="/admin/ui/webhooks" { "Webhooks" } }
                    }
                    form.signout method="post" action="/admin/ui/logout" {
                        (csrf(ctx))
                        span.who { (ctx.session.label()) }
                        button type="submit" { "Sign out" }
                    }
                }
                main id="main" { (body) }
            }
        },
    )
}

/// A timestamp as the console shows it (UTC, seconds).
pub fn when(t: &DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// An optional timestamp, or a dash.
pub fn when_opt(t: &Option<DateTime<Utc>>) -> String {
    t.as_ref().map_or_else(|| "—".to_string(), when)
}

/// Pretty JSON for a `<pre>`.
pub fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}
