/**
 * The idiomatic (camelCase) types of the SDK's public API.
 */
export {};
