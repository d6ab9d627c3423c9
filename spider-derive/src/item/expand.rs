//! Code generation for `#[derive(Item)]`: a selector per CSS field compiled once per
//! process, the page's JSON-LD (or a JSON page) parsed once if a field reads it, raw values read first,
//! then converted, so "this page has no such item" and "this page has it only in part"
//! can be told apart.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::attr::{Cardinality, Field, Model, PageFact, Reads, Source};

pub(crate) fn expand(input: &syn::DeriveInput, model: &Model) -> TokenStream {
    let fields = model.fields.as_slice();
    let ident = &input.ident;
    let (impl_generics, type_generics, where_clause) = input.generics.split_for_impl();
    let p = quote!(::spiderling::__private);
    let mut reads = Vec::new();
    let mut converts = Vec::new();
    let mut required = Vec::new();
    let mut any = Vec::new();
    let mut css_fields = 0;
    for (i, field) in fields.iter().enumerate() {
        let name = &field.ident;
        let raw = format_ident!("__raw_{}", i);
        let label = name.to_string();
        let all = matches!(field.cardinality, Cardinality::All);
        let (read, from) = read(field, css_fields, &p);
        if matches!(field.reads, Reads::Css { .. }) {
            css_fields += 1;
        }
        reads.push(quote!(let #raw = #read;));
        let inner = &field.inner;
        let converted = match &field.parse {
            Some(parse) => quote!(#p::with(text, #label, #from, #parse)),
            None => quote!(#p::from_str::<#inner>(text, #label, #from)),
        };
        // A JSON-LD read may have failed (an invalid block, and no valid one has the path),
        // and a JSON read (the page is not JSON).
        let unwrap = matches!(field.reads, Reads::JsonLd { .. } | Reads::Json { .. })
            .then(|| quote!(let #raw = #raw?;));
        converts.push(match field.cardinality {
            Cardinality::All => quote! {
                #unwrap
                let #name = #raw
                    .into_iter()
                    .map(|text| #converted)
                    .collect::<::core::result::Result<::std::vec::Vec<_>, _>>()?;
            },
            Cardinality::Maybe => quote! {
                #unwrap
                let #name = match #raw {
                    ::core::option::Option::Some(text) => ::core::option::Option::Some(#converted?),
                    ::core::option::Option::None => ::core::option::Option::None,
                };
            },
            Cardinality::One if field.default => quote! {
                #unwrap
                let #name = match #raw {
                    ::core::option::Option::Some(text) => #converted?,
                    ::core::option::Option::None => ::core::default::Default::default(),
                };
            },
            Cardinality::One => quote! {
                #unwrap
                let #name = match #raw {
                    ::core::option::Option::Some(text) => #converted?,
                    ::core::option::Option::None => {
                        return ::core::result::Result::Err(#p::missing(#label, #from));
                    }
                };
            },
        });
        // Whether the page has the field: CSS and JSON-LD fields only (page fields every
        // page has); a JSON-LD read that failed counts, so its error is not lost.
        let found = match (&field.reads, all) {
            (Reads::Css { .. }, true) => quote!(!#raw.is_empty()),
            (Reads::Css { .. }, false) => quote!(#raw.is_some()),
            (Reads::JsonLd { .. } | Reads::Json { .. }, true) => {
                quote!(!::core::matches!(&#raw, ::core::result::Result::Ok(values) if values.is_empty()))
            }
            (Reads::JsonLd { .. } | Reads::Json { .. }, false) => quote!(!::core::matches!(
                #raw,
                ::core::result::Result::Ok(::core::option::Option::None)
            )),
            (Reads::Page(_), _) => continue,
        };
        if matches!(field.cardinality, Cardinality::One) && !field.default {
            required.push(found.clone());
        }
        any.push(found);
    }
    // The page has the item when a required field is found (any field, if none is
    // required); an item of page fields only, every page has.
    let present = if required.is_empty() { any } else { required };
    let check = (!present.is_empty()).then(|| {
        quote! {
            if !(false #(|| #present)*) {
                return ::core::result::Result::Ok(::core::option::Option::None);
            }
        }
    });
    let has_json_ld = fields.iter().any(|field| matches!(field.reads, Reads::JsonLd { .. }));
    // The JSON-LD scripts' selector comes after the `#[css]` fields in the plan.
    let json_ld = has_json_ld.then(|| quote!(let __json_ld = #p::Reader::json_ld(doc, #css_fields);));
    let json = fields
        .iter()
        .any(|field| matches!(field.reads, Reads::Json { .. }))
        .then(|| quote!(let __json = #p::JsonBody::read(doc);));
    let names = fields.iter().map(|f| &f.ident);
    // What a render waits for: the selectors of the fields the item cannot do without.
    let awaited = fields.iter().filter_map(|field| match &field.reads {
        Reads::Css { selector, .. } if matches!(field.cardinality, Cardinality::One) && !field.default => {
            Some(selector)
        }
        _ => None,
    });
    // One body reads the item from either engine.
    let streamed = match stream_plan(fields, has_json_ld, &p) {
        Ok(plan) => quote! {
            const STREAM: ::core::result::Result<&'static [#p::FieldRead], &'static str> =
                ::core::result::Result::Ok(&[#(#plan),*]);

            fn extract_streamed(
                found: &#p::Found<'_>,
            ) -> ::core::result::Result<::core::option::Option<Self>, #p::ExtractError> {
                read(found)
            }
        },
        Err(why) => quote! {
            const STREAM: ::core::result::Result<&'static [#p::FieldRead], &'static str> =
                ::core::result::Result::Err(#why);
        },
    };
    let checks = checks(model, &p);
    quote! {
        const _: () = {
            fn read(
                doc: &impl #p::Reader,
            ) -> ::core::result::Result<::core::option::Option<#ident>, #p::ExtractError> {
                #json_ld
                #json
                #(#reads)*
                #check
                #(#converts)*
                ::core::result::Result::Ok(::core::option::Option::Some(#ident { #(#names),* }))
            }

            impl #impl_generics #p::Item for #ident #type_generics #where_clause {
                #checks

                fn extract(
                    doc: &#p::Document<'_>,
                ) -> ::core::result::Result<::core::option::Option<Self>, #p::ExtractError> {
                    read(doc)
                }

                const AWAIT: &'static [&'static str] = &[#(#awaited),*];

                #streamed
            }
        };
    }
}

/// `Item::check`, when the item has a required text field or `validate`, and `Item::key`,
/// when a field is its key.
fn checks(model: &Model, p: &TokenStream) -> TokenStream {
    // A required field of text: `String` by its last segment, as written.
    let texts = model.fields.iter().filter(|field| {
        matches!(field.cardinality, Cardinality::One)
            && !field.default
            && matches!(
                &field.inner,
                syn::Type::Path(path) if path.path.segments.last().is_some_and(|s| s.ident == "String")
            )
    });
    let empty = texts
        .map(|field| {
            let name = &field.ident;
            let reason = syn::LitStr::new(&format!("empty {name}"), name.span());
            quote! {
                if self.#name.trim().is_empty() {
                    return ::core::result::Result::Err(#p::Dropped::new(#reason));
                }
            }
        })
        .collect::<Vec<_>>();
    let validate = model.validate.as_ref().map(|path| {
        quote_spanned! {path.span()=>
            if let ::core::result::Result::Err(why) = #path(self) {
                return ::core::result::Result::Err(#p::Dropped::new("invalid").because(why));
            }
        }
    });
    let check = (!empty.is_empty() || validate.is_some()).then(|| {
        quote! {
            fn check(&self) -> ::core::result::Result<(), #p::Dropped> {
                #(#empty)*
                #validate
                ::core::result::Result::Ok(())
            }
        }
    });
    let key = model.fields.iter().find(|field| field.key.is_some()).map(|field| {
        let name = &field.ident;
        quote! {
            fn key(&self) -> ::core::option::Option<#p::ItemKey> {
                #p::ItemKey::of(&self.#name)
            }
        }
    });
    quote!(#check #key)
}

/// The item's `#[css]` fields as the streaming engine's plan lists them, or why the
/// item does not stream (naming the field and its selector).
fn stream_plan(fields: &[Field], json_ld: bool, p: &TokenStream) -> Result<Vec<TokenStream>, String> {
    let mut plan = Vec::new();
    for field in fields {
        let Reads::Css { selector, source } = &field.reads else { continue };
        let name = &field.ident;
        let css = selector.value();
        if let Err(why) = spider_settings::stream_selector(&css) {
            return Err(format!("field `{name}` does not stream: {why}"));
        }
        let source = match source {
            Source::Text => quote!(#p::Source::Text),
            Source::Attr(attribute) => quote!(#p::Source::Attr(#attribute)),
            Source::Html => return Err(format!("field `{name}` reads `html`, which is read from the DOM")),
        };
        plan.push(quote!(#p::FieldRead { css: #selector, source: #source }));
    }
    if json_ld {
        plan.push(quote!(#p::FieldRead { css: #p::JSON_LD_SCRIPTS, source: #p::Source::Text }));
    }
    Ok(plan)
}

/// The expression reading `field`'s raw value (`Option<String>` or `Vec<String>`, in a
/// `Result` for JSON-LD), and the `FieldSource` its errors name.
/// `css_field` is the field's number among the item's `#[css]` fields.
fn read(field: &Field, css_field: usize, p: &TokenStream) -> (TokenStream, TokenStream) {
    let label = field.ident.to_string();
    let all = matches!(field.cardinality, Cardinality::All);
    match &field.reads {
        Reads::Css { selector, source } => {
            let source = match source {
                Source::Text => quote!(#p::Source::Text),
                Source::Html => quote!(#p::Source::Html),
                Source::Attr(attribute) => quote!(#p::Source::Attr(#attribute)),
            };
            let first_or_all = if all { quote!(all) } else { quote!(first) };
            let read = quote! {{
                static SELECTOR: #p::LazyLock<#p::Selector> = #p::LazyLock::new(|| #p::selector(#selector));
                #p::Reader::#first_or_all(doc, #css_field, &SELECTOR, #source)
            }};
            (read, quote!(#p::FieldSource::Css(#selector)))
        }
        Reads::JsonLd { path, of_type } => {
            let of_type = match of_type {
                Some(of_type) => quote!(::core::option::Option::Some(#of_type)),
                None => quote!(::core::option::Option::None),
            };
            let first_or_all = if all { quote!(#p::json_ld_all) } else { quote!(#p::json_ld_first) };
            let read = quote!(#first_or_all(&__json_ld, #label, #path, #of_type));
            (read, quote!(#p::FieldSource::JsonLd { path: #path, of_type: #of_type }))
        }
        Reads::Json { pointer } => {
            let first_or_all = if all { quote!(#p::json_all) } else { quote!(#p::json_first) };
            (quote!(#first_or_all(&__json, #label, #pointer)), quote!(#p::FieldSource::Json(#pointer)))
        }
        Reads::Page(fact) => {
            let variant = match fact {
                PageFact::Url => quote!(Url),
                PageFact::FinalUrl => quote!(FinalUrl),
                PageFact::Status => quote!(Status),
                PageFact::FetchedAt => quote!(FetchedAt),
                PageFact::Depth => quote!(Depth),
                PageFact::Rendered => quote!(Rendered),
                PageFact::Meta(key) => quote!(Meta(#key)),
                PageFact::Markdown => quote!(Markdown),
                PageFact::Text => quote!(Text),
                PageFact::Title => quote!(Title),
                PageFact::Author => quote!(Author),
                PageFact::Published => quote!(Published),
                PageFact::Lang => quote!(Lang),
                PageFact::Description => quote!(Description),
                PageFact::SiteName => quote!(SiteName),
            };
            let from = match fact {
                PageFact::Meta(key) => quote!(#p::FieldSource::Meta(#key)),
                other => {
                    let name = other.name();
                    quote!(#p::FieldSource::Page(#name))
                }
            };
            (quote!(#p::Reader::page_field(doc, #p::PageField::#variant)), from)
        }
    }
}

/// Beside compile errors: an impl that keeps follow-on errors away.
pub(crate) fn stub(input: &syn::DeriveInput) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, type_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        impl #impl_generics ::spiderling::__private::Item for #ident #type_generics #where_clause {
            fn extract(
                _: &::spiderling::__private::Document<'_>,
            ) -> ::core::result::Result<::core::option::Option<Self>, ::spiderling::__private::ExtractError> {
                ::core::result::Result::Ok(::core::option::Option::None)
            }
        }
    }
}
