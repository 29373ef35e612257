export { HealthLoading as default } from "@/components/health-loading";
