/** Start-up refused for a reason the operator can fix (printed as one line, no stack, exit 2). */
export class StartupError extends Error {
  override readonly name = "StartupError";
}
