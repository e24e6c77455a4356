// Packages the tests use that ship no type declarations.
declare module 's3rver';
declare module 'autocannon';
