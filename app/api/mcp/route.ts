import { handleMcpPost, mcpMethodNotAllowed } from "@/lib/mcp/http";

export const dynamic = "force-dynamic";

export const POST = (request: Request) => handleMcpPost(request);
export const GET = () => mcpMethodNotAllowed();
export const DELETE = () => mcpMethodNotAllowed();
