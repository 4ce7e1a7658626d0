import { Module } from '@nestjs/common';
import { CatalogLoader } from './catalog-loader.service';

@Module({ providers: [CatalogLoader], exports: [CatalogLoader] })
export class CatalogModule {}
