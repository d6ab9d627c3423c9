//! Code generation for `#[derive(Item)]`: a selector per field compiled once per
//! process, raw values read first, then converted, so "this page has no such item" and
//! "this page has it only in part" can be told apart.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::attr::{Cardinality, Field, Source};

pub(crate) fn expand(input: &syn::DeriveInput, fields: &[Field]) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, type_generics, where_clause) = input.generics.split_for_impl();
    let p = quote!(::spiderling::__private);
    let mut reads = Vec::new();
    let mut converts = Vec::new();
    let mut present = Vec::new();
    let mut any = Vec::new();
    for (i, field) in fields.iter().enumerate() {
        let name = &field.ident;
        let raw = format_ident!("__raw_{}", i);
        let css = &field.selector;
        let source = match &field.source {
            Source::Text => quote!(#p::Source::Text),
            Source::Html => quote!(#p::Source::Html),
            Source::Attr(attribute) => quote!(#p::Source::Attr(#attribute)),
        };
        let label = name.to_string();
        let inner = &field.inner;
        let convert = |value: TokenStream| match &field.parse {
            Some(parse) => quote!(#p::with(#value, #label, #css, #parse)),
            None => quote!(#p::from_str::<#inner>(#value, #label, #css)),
        };
        let read = match field.cardinality {
            Cardinality::All => quote!(#p::all),
            _ => quote!(#p::first),
        };
        reads.push(quote! {
            let #raw = {
                static SELECTOR: #p::LazyLock<#p::Selector> = #p::LazyLock::new(|| #p::selector(#css));
                #read(doc, &SELECTOR, #source)
            };
        });
        let converted = convert(quote!(text));
        converts.push(match field.cardinality {
            Cardinality::All => quote! {
                let #name = #raw
                    .into_iter()
                    .map(|text| #converted)
                    .collect::<::core::result::Result<::std::vec::Vec<_>, _>>()?;
            },
            Cardinality::Maybe => quote! {
                let #name = match #raw {
                    ::core::option::Option::Some(text) => ::core::option::Option::Some(#converted?),
                    ::core::option::Option::None => ::core::option::Option::None,
                };
            },
            Cardinality::One if field.default => quote! {
                let #name = match #raw {
                    ::core::option::Option::Some(text) => #converted?,
                    ::core::option::Option::None => ::core::default::Default::default(),
                };
            },
            Cardinality::One => quote! {
                let #name = match #raw {
                    ::core::option::Option::Some(text) => #converted?,
                    ::core::option::Option::None => return ::core::result::Result::Err(#p::missing(#label, #css)),
                };
            },
        });
        let matched = match field.cardinality {
            Cardinality::All => quote!(!#raw.is_empty()),
            _ => quote!(#raw.is_some()),
        };
        if matches!(field.cardinality, Cardinality::One) && !field.default {
            present.push(matched.clone());
        }
        any.push(matched);
    }
    // The page has the item when a required field matches (any field, if none is required).
    let present = if present.is_empty() { any } else { present };
    let names = fields.iter().map(|f| &f.ident);
    quote! {
        const _: () = {
            impl #impl_generics #p::Item for #ident #type_generics #where_clause {
                fn extract(
                    doc: &#p::Document<'_>,
                ) -> ::core::result::Result<::core::option::Option<Self>, #p::ExtractError> {
                    #(#reads)*
                    if !(false #(|| #present)*) {
                        return ::core::result::Result::Ok(::core::option::Option::None);
                    }
                    #(#converts)*
                    ::core::result::Result::Ok(::core::option::Option::Some(Self { #(#names),* }))
                }
            }
        };
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
