export { StorePageSkeleton as default } from "@/components/store-page-skeleton";
