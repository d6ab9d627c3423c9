//! The model of an item: one checked `#[css(...)]` per field.

use syn::parse::{Parse, ParseStream};
use syn::{Data, Fields, GenericArgument, Ident, LitStr, PathArguments, Token, Type};

use crate::errors::Errors;

/// How many matches a field takes, decided by its type.
pub(crate) enum Cardinality {
    /// `T`: exactly one, required unless `default`.
    One,
    /// `Option<T>`: one if any.
    Maybe,
    /// `Vec<T>`: all.
    All,
}

/// What a field reads from a matching element.
pub(crate) enum Source {
    Text,
    Html,
    Attr(LitStr),
}

pub(crate) struct Field {
    pub(crate) ident: Ident,
    pub(crate) selector: LitStr,
    pub(crate) source: Source,
    pub(crate) parse: Option<syn::Path>,
    pub(crate) default: bool,
    pub(crate) cardinality: Cardinality,
    /// `T` of `T`, `Option<T>`, `Vec<T>`.
    pub(crate) inner: Type,
}

const OPTIONS: &[&str] = &["attr", "html", "parse", "default"];

/// `#[css("selector", option, ...)]` as written, before checks that need the field.
struct Css {
    selector: LitStr,
    options: Vec<(Ident, Option<OptionValue>)>,
}

enum OptionValue {
    Str(LitStr),
    Path(syn::Path),
}

impl Parse for Css {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let selector: LitStr = input.parse()?;
        let mut options = Vec::new();
        while !input.is_empty() {
            input.parse::<Token![,]>()?;
            if input.is_empty() {
                break;
            }
            let name: Ident = input.parse()?;
            let value = if input.peek(Token![=]) {
                input.parse::<Token![=]>()?;
                if input.peek(LitStr) {
                    Some(OptionValue::Str(input.parse()?))
                } else {
                    Some(OptionValue::Path(input.parse()?))
                }
            } else {
                None
            };
            options.push((name, value));
        }
        Ok(Css { selector, options })
    }
}

pub(crate) fn read(input: &syn::DeriveInput, errors: &mut Errors) -> Vec<Field> {
    let named = match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(named) => Some(named),
            _ => None,
        },
        _ => None,
    };
    if !input.generics.params.is_empty() {
        errors.at(
            &input.generics,
            "#[derive(Item)] does not take generic structs; give the fields concrete types",
        );
        return Vec::new();
    }
    let Some(named) = named else {
        errors.at(&input.ident, "#[derive(Item)] needs a struct with named fields, one #[css(\"...\")] each");
        return Vec::new();
    };
    let mut fields = Vec::new();
    for field in &named.named {
        let Some(ident) = field.ident.clone() else { continue };
        let css: Vec<_> = field.attrs.iter().filter(|a| a.path().is_ident("css")).collect();
        let Some(attr) = css.first() else {
            errors.at(&ident, format!("field `{ident}` has no selector; add #[css(\"...\")] above it"));
            continue;
        };
        if let Some(extra) = css.get(1) {
            errors.at(extra, "one #[css(...)] per field");
        }
        let css = match attr.parse_args::<Css>() {
            Ok(css) => css,
            Err(error) => {
                errors.push(error);
                continue;
            }
        };
        if let Some(field) = check(&ident, &field.ty, css, errors) {
            fields.push(field);
        }
    }
    fields
}

fn check(ident: &Ident, ty: &Type, css: Css, errors: &mut Errors) -> Option<Field> {
    let before = errors.count();
    if let Err(message) = crate::check_selector(&css.selector.value()) {
        errors.at(&css.selector, message);
    }
    let mut source = Source::Text;
    let mut parse = None;
    let mut default = false;
    let mut seen: Vec<String> = Vec::new();
    for (name, value) in css.options {
        let option = name.to_string();
        if seen.contains(&option) {
            errors.at(&name, format!("`{option}` is given twice"));
            continue;
        }
        seen.push(option.clone());
        match (option.as_str(), value) {
            ("attr", Some(OptionValue::Str(attribute))) => source = Source::Attr(attribute),
            ("attr", _) => errors.at(&name, "write `attr = \"href\"`: the attribute's name as a string"),
            ("html", None) => source = Source::Html,
            ("html", Some(_)) => errors.at(&name, "`html` takes no value; write `html`"),
            ("parse", Some(OptionValue::Path(path))) => parse = Some(path),
            ("parse", _) => {
                errors.at(&name, "write `parse = my_function` (no quotes): a fn(&str) -> Result<T, E>")
            }
            ("default", None) => default = true,
            ("default", Some(_)) => errors.at(&name, "`default` takes no value; write `default`"),
            (other, _) => {
                let hint = spider_settings::closest(other, OPTIONS).map_or_else(
                    || format!("; the options are {}", OPTIONS.join(", ")),
                    |o| format!("; did you mean `{o}`?"),
                );
                errors.at(&name, format!("unknown option `{other}`{hint}"));
            }
        }
    }
    if seen.iter().any(|o| o == "attr") && seen.iter().any(|o| o == "html") {
        errors.at(ident, "`attr` and `html` both say what to read; keep one");
    }
    let (cardinality, inner) = wrapper(ty);
    if !matches!(cardinality, Cardinality::One) && !matches!(wrapper(&inner).0, Cardinality::One) {
        errors.at(ty, "a field is `T` (one), `Option<T>` (maybe) or `Vec<T>` (all); a Vec is already empty when nothing matches");
    }
    if default && !matches!(cardinality, Cardinality::One) {
        errors.at(
            ident,
            "`default` is for a required field: an Option is None and a Vec empty when nothing matches",
        );
    }
    (errors.count() == before).then(|| Field {
        ident: ident.clone(),
        selector: css.selector,
        source,
        parse,
        default,
        cardinality,
        inner,
    })
}

fn wrapper(ty: &Type) -> (Cardinality, Type) {
    if let Type::Path(path) = ty {
        if let Some(last) = path.path.segments.last() {
            let wrapper = match last.ident.to_string().as_str() {
                "Option" => Some(Cardinality::Maybe),
                "Vec" => Some(Cardinality::All),
                _ => None,
            };
            if let (Some(wrapper), PathArguments::AngleBracketed(args)) = (wrapper, &last.arguments) {
                if let Some(GenericArgument::Type(inner)) = args.args.first() {
                    return (wrapper, inner.clone());
                }
            }
        }
    }
    (Cardinality::One, ty.clone())
}
