/**
 * Entry of the single binary (`bun run compile`): the native library (ffi/build/
 * libswitchyard.so, built by the same script first) is embedded in the binary, and the
 * loader is pointed at the embedded copy unless SWITCHYARD_FFI_LIB names another one; then it
 * is the ordinary CLI (src/main.ts). Bun's dlopen opens embedded files directly, so the binary
 * runs the native hasher from any directory, with nothing beside it.
 */
import embeddedLibrary from "../../ffi/build/libswitchyard.so" with { type: "file" };
import { main } from "../main.ts";
import { FFI_LIB_ENV } from "../transfer/native/library.ts";

process.env[FFI_LIB_ENV] ??= embeddedLibrary;
await main(process.argv.slice(2));
