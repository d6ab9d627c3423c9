//! The syntax the field attributes share: `#[css("selector", option, name = value, ...)]`,
//! `#[json_ld("path", ...)]`, `#[page(name, ...)]`; a leading string, if any, then
//! options, each a name with an optional value. What the names mean is checked in
//! `attr.rs`.

use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::{Ident, LitStr, Token};

/// The arguments of one field attribute, as written.
pub(crate) struct Args {
    /// The leading string: a selector, a JSON-LD path.
    pub(crate) lead: Option<LitStr>,
    pub(crate) options: Vec<Opt>,
}

/// `name`, `name = "text"` or `name = path`.
pub(crate) struct Opt {
    /// Any identifier, keywords too (`type = "Product"`).
    pub(crate) name: Ident,
    pub(crate) value: Option<OptValue>,
}

pub(crate) enum OptValue {
    Str(LitStr),
    Path(syn::Path),
}

impl Parse for Args {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let lead = if input.peek(LitStr) { Some(input.parse()?) } else { None };
        let mut options = Vec::new();
        let mut first = lead.is_none();
        while !input.is_empty() {
            if !first {
                input.parse::<Token![,]>()?;
                if input.is_empty() {
                    break;
                }
            }
            first = false;
            let name = Ident::parse_any(input)?;
            let value = if input.peek(Token![=]) {
                input.parse::<Token![=]>()?;
                if input.peek(LitStr) {
                    Some(OptValue::Str(input.parse()?))
                } else {
                    Some(OptValue::Path(input.parse()?))
                }
            } else {
                None
            };
            options.push(Opt { name, value });
        }
        Ok(Args { lead, options })
    }
}
