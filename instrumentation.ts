export async function register() {
  if (process.env.NEXT_RUNTIME === "nodejs") {
    const { bootstrapApp } = await import("./lib/bootstrap");
    bootstrapApp();
  }
}
